package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shared-memory segments as a client sees them (a second open and mapping of {@code /proc/<pid>/fd/<n>}),
 * their seals, reuse, budget and the orphaned files of earlier versions.
 */
class SharedSegmentsTest {
    @TempDir
    Path dir;

    private static List<Path> files(Path dir) throws Exception {
        try (var s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    /** Writes {@code bytes} at {@code offset} through a mapping of its own, as a client process does. */
    private static void clientWrite(Path file, long offset, byte[] bytes) throws Exception {
        try (var raf = new RandomAccessFile(file.toFile(), "rw"); FileChannel ch = raf.getChannel()) {
            ch.map(FileChannel.MapMode.READ_WRITE, offset, bytes.length).put(bytes);
        }
    }

    @Test
    void clientWrites_becomeBlobBytes_acrossWindows_withExactAccounting() throws Exception {
        Allocator a = new Allocator(64L << 20, 4096); // 4 KiB windows: blobs cross window boundaries
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            SharedSegment s = segs.acquire(10_000 + 77);
            assertEquals("/proc/" + ProcessHandle.current().pid() + "/fd", s.file().getParent().toString());
            assertEquals(s.capacity(), a.usedBytes()); // the segment counts once, from creation
            String header = new String(Files.readAllBytes(s.file()), 0, 64, StandardCharsets.US_ASCII);
            assertTrue(header.startsWith("TENPLEX-SHM 1\n" + s.nonce() + "\n"), header);
            byte[] data = new byte[10_000];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 31 + 7);
            }
            clientWrite(s.file(), SharedSegment.HEADER + 77, data);
            Blob b = s.blob(a, SharedSegment.HEADER + 77, data.length);
            s.release(); // the reservation ends; the blob keeps the segment
            ByteBuffer out = ByteBuffer.allocate(data.length);
            b.copyTo(0, data.length, out);
            assertTrue(java.util.Arrays.equals(data, out.array()));
            assertEquals(s.file().toString(), b.sharedLocation().orElseThrow().file().toString());
            assertEquals(s.capacity(), a.usedBytes()); // the blob is not counted again
            assertEquals(1, segs.liveSegments());
            b.release();
            assertEquals(0, segs.liveSegments());
            assertEquals(s.capacity(), segs.keptBytes()); // kept for the next save: not used, but pooled
            assertEquals(0, a.usedBytes());
            assertEquals(s.capacity(), a.pooledBytes());
        }
        assertEquals(0, a.usedBytes());
        assertEquals(0, a.pooledBytes());
        assertEquals(List.of(), files(dir)); // nothing is made in the directory
        a.close();
    }

    @Test
    void segment_cannotBeShrunkOrGrown_byAnotherOpenOfIt() throws Exception {
        Allocator a = new Allocator(64L << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            SharedSegment s = segs.acquire(3 << 20);
            long size = s.capacity();
            try (var raf = new RandomAccessFile(s.file().toFile(), "rw")) { // what a client opens
                assertEquals(size, raf.length());
                assertThrows(java.io.IOException.class, () -> raf.setLength(SharedSegment.HEADER)); // EPERM: sealed
                assertThrows(java.io.IOException.class, () -> raf.setLength(size + 4096));
                assertThrows(java.io.IOException.class, () -> raf.setLength(0));
                assertEquals(size, raf.length());
            }
            Blob b = s.blob(a, size - 4096, 4096); // the last page still reads (it would SIGBUS past a truncation)
            assertEquals(0, b.get(4095));
            assertEquals(java.util.OptionalInt.of(BlockChecksums.compute(b, 4096).block(0)),
                    BlockChecksums.compute(b, 4096).range(0, 4096));
            b.release();
            s.release();
        }
        a.close();
    }

    @Test
    void freedSegment_isReusedBySaveOfSimilarSize_notByMuchSmaller() throws Exception {
        Allocator a = new Allocator(64L << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            SharedSegment first = segs.acquire(3 << 20);
            Path file = first.file();
            first.release();
            SharedSegment again = segs.acquire((3 << 20) - 1000);
            assertEquals(file, again.file());
            again.release();
            SharedSegment small = segs.acquire(1000); // would waste the big one: a new segment
            assertFalse(small.file().equals(file));
            small.release();
            assertEquals((4 << 20) + SharedSegments.GRAIN, segs.keptBytes()); // 3 MiB and its header, 1000 bytes and its header
        }
        assertEquals(List.of(), files(dir));
        a.close();
    }

    @Test
    void keptSegments_areNotUsed_andGivenBack_beforeAnyRefusal() throws Exception {
        Allocator a = new Allocator(8L << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            segs.acquire(5 << 20).release(); // kept: 6 MiB of the 8 MiB budget
            assertEquals(0, a.usedBytes());
            assertEquals(6 << 20, a.pooledBytes());
            Blob blob = a.allocate(4 << 20); // fits the budget once the kept segment is given back
            assertEquals(0, segs.keptBytes());
            assertEquals(4 << 20, a.usedBytes());
            assertThrows(OutOfBudgetException.class, () -> segs.acquire(5 << 20)); // 4 + 6 > 8: refused
            assertEquals(0, segs.liveSegments()); // nothing of a refused reservation is left
            assertEquals(4 << 20, a.usedBytes());
            blob.release();
            SharedSegment s = segs.acquire(5 << 20);
            s.release();
            Blob again = a.allocate(7 << 20); // a chunk pool and a kept segment: both given back
            assertEquals(7 << 20, a.usedBytes());
            assertTrue(a.usedBytes() + a.pooledBytes() <= a.budget());
            again.release();
        }
        a.close();
    }

    @Test
    void orphans_ofProcessesThatAreGone_areRemoved_othersKept() throws Exception {
        long pid = ProcessHandle.current().pid();
        Path reusedPid = Files.createFile(dir.resolve("tenplex-" + pid + "-1-3")); // our pid, another start: gone
        Path gone = Files.createFile(dir.resolve("tenplex-999999999-5-1"));
        Path running = Files.createFile(dir.resolve("tenplex-" + pid + "-" + ProcessStart.self() + "-9"));
        Path other = Files.createFile(dir.resolve("tenplex-notes.txt"));
        assertEquals(2, SharedSegments.removeOrphans(dir));
        assertFalse(Files.exists(reusedPid));
        assertFalse(Files.exists(gone));
        assertTrue(Files.exists(running));
        assertTrue(Files.exists(other));
    }

    @Test
    void processStart_tellsThisProcessFromPidReuse() {
        long pid = ProcessHandle.current().pid();
        assertTrue(ProcessStart.alive(pid, ProcessStart.self()));
        assertFalse(ProcessStart.alive(pid, ProcessStart.self() + 1));
        assertFalse(ProcessStart.alive(-1, 0));
    }
}
