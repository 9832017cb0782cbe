package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.SharedSegment;
import io.tenplex.store.memory.SharedSegments;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A kept shard (the new configuration's shard is a saved one, whole) is linked to the saved tensor's
 * memory: when that memory is a client's shared-memory segment whose bytes changed after the commit,
 * the keep is refused (409 conflict) and nothing is staged, as a copied piece is refused by {@link
 * StoreSource}; an unchanged segment is kept without a copy.
 */
class StagingSinkTest {
    private static final int BLOCK = 4096;
    private static final JobLayout PATHS = new JobLayout("j");

    @TempDir
    Path dir;

    /**
     * A part naming one destination shard twice (a malformed plan): the second open is refused, and the
     * first shard's buffer is still the sink's, freed by the abort that follows the failed run (the second
     * open replaced it, so it was neither completed nor freed).
     */
    @Test
    void aShardOpenedTwice_isRefused_andTheAbortFreesBoth() {
        Allocator a = new Allocator(64L << 20, BLOCK);
        try (TensorStore store = new TensorStore(a, BLOCK)) {
            StagingSink sink = new StagingSink(store, PATHS, "p1");
            sink.open(0, "w", io.tenplex.ptc.Shape.of(16), DType.F32);
            assertThrows(IllegalArgumentException.class, () -> sink.open(0, "w", io.tenplex.ptc.Shape.of(32), DType.F32));
            sink.abort();
            assertEquals(0, a.usedBytes(), "a shard buffer was neither completed nor freed");
        }
    }

    @Test
    void keptShard_whoseSegmentChangedAfterTheCommit_isRefused_andNothingIsStaged() throws Exception {
        Allocator a = new Allocator(64L << 20, BLOCK);
        try (SharedSegments segs = new SharedSegments(dir, a); TensorStore store = new TensorStore(a, BLOCK)) {
            long size = 3 * 4099 * 4; // f32 [3, 4099]: blocks that do not end at a row
            SharedSegment s = segs.acquire(size);
            byte[] data = new byte[(int) size];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 31 + 7);
            }
            write(s.file(), SharedSegment.HEADER, data);
            Blob blob = s.blob(a, SharedSegment.HEADER, size);
            s.release();
            TensorMeta meta = TensorMeta.of(DType.F32, 3, 4099);
            store.putTensor(PATHS.saved(1, "w"), meta, blob, BlockChecksums.compute(blob, BLOCK), false); // the commit

            StagingSink sink = new StagingSink(store, PATHS, "p1");
            sink.keep(0, "w", 1, "w"); // unchanged: linked
            try (DataRef kept = store.openTensor(PATHS.staged("p1", 0, "w"))) {
                byte[] got = new byte[(int) size];
                kept.copyTo(0, size, ByteBuffer.wrap(got));
                assertArrayEquals(data, got);
            }

            write(s.file(), SharedSegment.HEADER + 2 * BLOCK + 9, new byte[] {(byte) (data[2 * BLOCK + 9] ^ 0x10)});
            StagingSink next = new StagingSink(store, PATHS, "p2");
            StoreException e = assertThrows(StoreException.class, () -> next.keep(0, "w", 1, "w"));
            assertEquals(StoreException.Kind.CONFLICT, e.kind());
            assertTrue(e.getMessage().contains("changed in its shared-memory segment after they were committed"),
                    e.getMessage());
            assertTrue(store.stat(PATHS.staged("p2", 0, "w")).isEmpty(), "nothing staged for the refused keep");
        }
        a.close();
    }

    /**
     * New shards lie in shared memory a load maps (one segment for the part); the first move touches new
     * memory and says so; once those shards are gone the next move recycles the segment, with no note, and
     * a padded shard there reads zeros where the old bytes were, while a tiled one is not zeroed first.
     */
    @Test
    void newShards_lieInSharedMemory_recycledOnTheNextMove_zeroedWhereThePlanLeavesPadding() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (SharedSegments segs = new SharedSegments(dir, a); TensorStore store = new TensorStore(a, BLOCK)) {
            io.tenplex.ptc.Shape shape = io.tenplex.ptc.Shape.of(1001, 7);
            StagingSink first = new StagingSink(store, PATHS, "p1", segs);
            first.expect(new long[] {1001 * 7 * 4, 1001 * 7 * 4});
            for (int r = 0; r < 2; r++) {
                ByteBuffer buf = first.open(r, "w", shape, DType.F32, true);
                while (buf.hasRemaining()) {
                    buf.put((byte) 0x5a); // what the pieces write
                }
                first.complete(r, "w");
            }
            first.finish();
            String note = first.slowMemory();
            assertTrue(note != null && note.contains("into 1 new shared-memory segment") && note.contains("first time"),
                    String.valueOf(note));
            java.nio.file.Path file;
            try (DataRef moved = store.openTensor(PATHS.staged("p1", 0, "w"));
                    DataRef other = store.openTensor(PATHS.staged("p1", 1, "w"))) {
                file = moved.sharedLocation().orElseThrow().file();
                assertEquals(file, other.sharedLocation().orElseThrow().file(), "one segment for the part");
            }
            store.delete(PATHS.staging("p1")); // the next generation replaced them: the segment is kept

            StagingSink next = new StagingSink(store, PATHS, "p2", segs);
            next.expect(new long[] {1001 * 7 * 4, 1001 * 7 * 4});
            ByteBuffer padded = next.open(0, "w", shape, DType.F32, false);
            byte[] got = new byte[padded.remaining()];
            padded.duplicate().get(got);
            assertArrayEquals(new byte[got.length], got, "padding reads zeros, not the last move's bytes");
            ByteBuffer tiled = next.open(1, "w", shape, DType.F32, true);
            assertEquals(0x5a, tiled.get(100), "a tiled shard is not zeroed first: its pieces write every byte");
            next.complete(0, "w");
            next.complete(1, "w");
            next.finish();
            assertEquals(null, next.slowMemory(), "recycled shared memory: nothing slower to say");
            try (DataRef moved = store.openTensor(PATHS.staged("p2", 0, "w"))) {
                assertEquals(file, moved.sharedLocation().orElseThrow().file(), "the same segment, recycled");
            }
            store.delete(PATHS.staging("p2"));
        }
        a.close();
    }

    /** Without shared memory the shards go to private memory, and the note says a load copies them again. */
    @Test
    void withoutSharedMemory_privateMemory_andTheNoteSaysWhy() throws Exception {
        Allocator a = new Allocator(64L << 20, 1 << 20);
        try (TensorStore store = new TensorStore(a, BLOCK)) {
            StagingSink sink = new StagingSink(store, PATHS, "p1", null);
            sink.expect(new long[] {4000});
            sink.open(0, "w", io.tenplex.ptc.Shape.of(1000), DType.F32, true);
            sink.complete(0, "w");
            sink.finish();
            assertTrue(sink.slowMemory().startsWith("4.0 kB into private memory, which a load copies again"),
                    sink.slowMemory());
            assertTrue(sink.slowMemory().contains("the daemon has no shared memory"), sink.slowMemory());
            try (DataRef moved = store.openTensor(PATHS.staged("p1", 0, "w"))) {
                assertTrue(moved.sharedLocation().isEmpty());
            }
        }
        a.close();
    }

    /** Writes {@code bytes} at {@code offset} through a mapping of its own, as a client process does. */
    private static void write(Path file, long offset, byte[] bytes) throws Exception {
        try (var raf = new RandomAccessFile(file.toFile(), "rw"); FileChannel ch = raf.getChannel()) {
            ch.map(FileChannel.MapMode.READ_WRITE, offset, bytes.length).put(ByteBuffer.wrap(bytes));
        }
    }
}
