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

    /** Writes {@code bytes} at {@code offset} through a mapping of its own, as a client process does. */
    private static void write(Path file, long offset, byte[] bytes) throws Exception {
        try (var raf = new RandomAccessFile(file.toFile(), "rw"); FileChannel ch = raf.getChannel()) {
            ch.map(FileChannel.MapMode.READ_WRITE, offset, bytes.length).put(ByteBuffer.wrap(bytes));
        }
    }
}
