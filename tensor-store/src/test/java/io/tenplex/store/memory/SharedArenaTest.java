package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Blobs the daemon writes into shared memory itself: laid out in as few segments as the expected sizes
 * need, aligned for a client's mapping, recycled from kept segments (old bytes and all) before new
 * ones are made, and counted once against the budget.
 */
class SharedArenaTest {
    @TempDir
    Path dir;

    private static final long[] ODD = {3, 10_007, 64, 1 << 20, 4095, 4096, 1};

    private static byte[] read(Path file, long offset, int n) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(n);
            ch.read(b, offset);
            return b.array();
        }
    }

    @Test
    void expectedBlobs_shareOneNewSegment_alignedAndMappableByAClient() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a); SharedArena arena = new SharedArena(segs, a)) {
            arena.expect(ODD);
            List<Blob> blobs = new ArrayList<>();
            for (long size : ODD) {
                Blob b = arena.take(size);
                assertFalse(arena.recycled());
                byte[] data = new byte[(int) size];
                java.util.Arrays.fill(data, (byte) (size % 251 + 1));
                b.write(0, ByteBuffer.wrap(data));
                blobs.add(b);
            }
            SharedSegment.Location first = blobs.get(0).sharedLocation().orElseThrow();
            for (int i = 0; i < blobs.size(); i++) {
                SharedSegment.Location loc = blobs.get(i).sharedLocation().orElseThrow();
                assertEquals(first.file(), loc.file(), "one segment for all the expected blobs");
                assertEquals(0, loc.offset() % (ODD[i] >= 4096 ? 4096 : 64), "aligned: " + loc);
                byte[] seen = read(loc.file(), loc.offset(), (int) ODD[i]); // as a client maps it
                for (byte x : seen) {
                    assertEquals((byte) (ODD[i] % 251 + 1), x);
                }
            }
            assertEquals(1, arena.freshSegments());
            assertEquals(0, arena.recycledBytes());
            assertEquals(first.capacity(), arena.freshBytes());
            assertEquals(first.capacity(), a.usedBytes(), "the segment counts once, not again per blob");
            arena.close();
            assertEquals(1, segs.liveSegments(), "the blobs hold the segment");
            blobs.forEach(Blob::release);
            assertEquals(0, segs.liveSegments());
            assertEquals(first.capacity(), segs.keptBytes(), "kept for reuse");
        }
    }

    @Test
    void keptSegments_areTakenFirst_evenSmallerOnes_andANewOneOnlyForTheRest() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            SharedSegment small = segs.acquire(3L << 20); // what an earlier save left: 3 MiB + header
            Blob old = small.blob(a, SharedSegment.HEADER, 1 << 20);
            old.write(0, ByteBuffer.wrap(new byte[] {42, 42, 42}));
            old.release();
            small.release();
            long kept = segs.keptBytes();
            assertTrue(kept > 0);
            try (SharedArena arena = new SharedArena(segs, a)) {
                long[] sizes = {1 << 20, 1 << 20, 5L << 20};
                arena.expect(sizes);
                Blob b0 = arena.take(sizes[0]);
                assertTrue(arena.recycled(), "the kept 3 MiB segment is taken though 7 MiB are expected");
                assertEquals(42, b0.views(0, 1)[0].get(0), "a recycled segment's old bytes are there until written");
                b0.zero();
                assertEquals(0, b0.views(0, 1)[0].get(0));
                Blob b1 = arena.take(sizes[1]);
                assertTrue(arena.recycled());
                Blob b2 = arena.take(sizes[2]); // does not fit the rest of the kept one
                assertFalse(arena.recycled());
                assertEquals(kept, arena.recycledBytes());
                assertEquals(1, arena.freshSegments());
                assertTrue(arena.freshBytes() >= sizes[2] && arena.freshBytes() < sizes[2] + (2L << 20), "sized for the rest");
                assertEquals(b0.sharedLocation().orElseThrow().file(), b1.sharedLocation().orElseThrow().file());
                assertFalse(b0.sharedLocation().orElseThrow().file().equals(b2.sharedLocation().orElseThrow().file()));
                List.of(b0, b1, b2).forEach(Blob::release);
            }
            assertEquals(0, segs.liveSegments());
        }
    }

    /** A segment touched ahead of a move is kept (not counted as used) and the move's arena recycles it. */
    @Test
    void aPrewarmedSegment_isKept_andTheArenaRecyclesIt_noNewMemory() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            long[] sizes = {3_000_001, 5_000_003};
            assertTrue(segs.prewarm(SharedArena.layout(sizes, 0)));
            assertEquals(0, a.usedBytes(), "kept, not used");
            assertTrue(segs.keptBytes() >= 8_000_004);
            assertFalse(segs.prewarm(SharedArena.layout(sizes, 0)), "a kept segment already fits");
            assertFalse(segs.prewarm(60L << 20), "it would leave less than a quarter of the budget free");
            try (SharedArena arena = new SharedArena(segs, a)) {
                arena.expect(sizes);
                Blob b0 = arena.take(sizes[0]);
                Blob b1 = arena.take(sizes[1]);
                assertTrue(arena.recycled());
                assertEquals(0, arena.freshSegments());
                assertEquals(0, b1.views(0, 1)[0].get(0), "touched, still zero");
                b0.release();
                b1.release();
            }
        }
    }

    /**
     * Segments of the same size touched ahead for a save and a move are two kept segments, each taken
     * once (recycled); a kept one matches one size only, and a size that fits none is made.
     */
    @Test
    void prewarmedSegmentsOfOneSize_areOnePerSize_andEachIsRecycledOnce() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            long size = 5_000_003;
            assertEquals(2, segs.prewarm(List.of(size, size)));
            assertEquals(0, a.usedBytes(), "kept, not used");
            assertEquals(0, segs.prewarm(List.of(size, size)), "both sizes fit a kept segment");
            assertEquals(1, segs.prewarm(List.of(size, size, 3_000_001L)), "the third fits none: made");
            assertEquals(0, segs.prewarm(List.of(0L, -1L)), "nothing to make");
            SharedSegments.Acquired first = segs.acquire(size, size);
            SharedSegments.Acquired second = segs.acquire(size, size);
            SharedSegments.Acquired third = segs.acquire(3_000_001L, 3_000_001L);
            SharedSegments.Acquired fourth = segs.acquire(size, size);
            assertTrue(first.recycled() && second.recycled() && third.recycled(), "each touched ahead");
            assertFalse(fourth.recycled(), "two were touched for this size");
            assertEquals(3, java.util.stream.Stream.of(first, second, third).map(x -> x.segment().file()).distinct().count());
            java.util.stream.Stream.of(first, second, third, fourth).forEach(x -> x.segment().release());
            assertEquals(0, segs.liveSegments());
        }
    }

    /**
     * Making segments ahead never gives back kept ones a size was matched to: what it makes must fit in
     * memory neither used nor kept, a quarter of the budget left free, all the made ones counted.
     */
    @Test
    void prewarm_makesOnlyWhatFitsBesideTheKeptSegments_andGivesNoneBack() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            long matched = 14L << 20;
            assertEquals(2, segs.prewarm(List.of(matched, matched)));
            long kept = segs.keptBytes();
            assertEquals(30L << 20, kept);
            assertEquals(0, segs.prewarm(List.of(matched, matched, 25L << 20, 25L << 20)),
                    "64 MiB less 30 kept and 16 free leaves 18: no room for 26");
            assertEquals(kept, segs.keptBytes(), "no kept segment given back");
            assertEquals(1, segs.prewarm(List.of(matched, matched, 10L << 20, 10L << 20)), "11 fits in 18, 22 does not");
            assertEquals(kept + (11L << 20), segs.keptBytes());
            assertEquals(0, segs.prewarm(List.of(Long.MAX_VALUE, Long.MAX_VALUE / 4 + 1)), "sizes past the limit: skipped");
            assertEquals(0, a.usedBytes());
        }
    }

    @Test
    void noRoomInTheBudget_isOutOfBudget_andNothingIsHeld() throws Exception {
        Allocator a = new Allocator(4L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a); SharedArena arena = new SharedArena(segs, a)) {
            arena.expect(new long[] {8L << 20});
            assertThrows(OutOfBudgetException.class, () -> arena.take(8L << 20));
            assertEquals(0, a.usedBytes());
            assertEquals(0, segs.liveSegments());
            assertThrows(IllegalArgumentException.class, () -> arena.take(-1));
        }
    }
}
