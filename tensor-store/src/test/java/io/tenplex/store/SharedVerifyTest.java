package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorMeta;
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
 * Bytes a client changes in its shared-memory segment after the commit are never passed on as the
 * tensor's: {@link DataRef#verifyShared} checks the checksum blocks a read touches against the CRC32C
 * stored at the commit (a reconfiguration's local reads and checksummed range reads call it); a read
 * of blocks the change did not touch, and memory of the daemon's own, pass.
 */
class SharedVerifyTest {
    private static final int BLOCK = 4096;

    @TempDir
    Path dir;

    @Test
    void byteChangedAfterTheCommit_isRefusedForTheBlocksItIsIn_only() throws Exception {
        Allocator a = new Allocator(64L << 20, BLOCK);
        try (SharedSegments segs = new SharedSegments(dir, a)) {
            int rows = 8;
            int cols = 2048; // f32: 8 KiB a row, two checksum blocks
            long size = (long) rows * cols * 4;
            SharedSegment s = segs.acquire(size);
            byte[] data = new byte[(int) size];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 13 + 5);
            }
            clientWrite(s.file(), SharedSegment.HEADER, data);
            Blob blob = s.blob(a, SharedSegment.HEADER, size);
            s.release();
            BlockChecksums sums = BlockChecksums.compute(blob, BLOCK); // what the commit stores
            TensorMeta meta = TensorMeta.of(DType.F32, rows, cols);
            try (DataRef ref = new DataRef(StorePath.parse("/job/j/save/0/w"), EntryType.TENSOR, meta, blob.retain(), sums)) {
                ref.verifyShared(0, size); // unchanged: passes
                clientWrite(s.file(), SharedSegment.HEADER + 3 * 8192 + 100, new byte[] {(byte) (data[3 * 8192 + 100] ^ 0x5a)});
                StoreException e = assertThrows(StoreException.class, () -> ref.verifyShared(0, size));
                assertEquals(StoreException.Kind.CONFLICT, e.kind());
                assertTrue(e.getMessage().contains("bytes 24576..28672 changed in its shared-memory segment after they were "
                        + "committed"), e.getMessage());
                // a region of rows 0-2 (blocks 0-5) and one of rows 4-7 do not touch the changed block 6
                new RegionRead(ref, meta, Region.at(new long[] {0, 0}, new long[] {3, cols}))
                        .verifyShared();
                new RegionRead(ref, meta, Region.at(new long[] {4, 0}, new long[] {4, cols}))
                        .verifyShared();
                // a column slice of every row spans the changed block
                RegionRead columns = new RegionRead(ref, meta, Region.at(new long[] {0, 0},
                        new long[] {rows, 16}));
                assertEquals(7 * 8192 + 64, columns.endOffset());
                assertThrows(StoreException.class, columns::verifyShared);
            }
            blob.release();
        }
        a.close();
    }

    /** Writes {@code bytes} at {@code offset} through a mapping of its own, as a client process does. */
    private static void clientWrite(Path file, long offset, byte[] bytes) throws Exception {
        try (var raf = new RandomAccessFile(file.toFile(), "rw"); FileChannel ch = raf.getChannel()) {
            ch.map(FileChannel.MapMode.READ_WRITE, offset, bytes.length).put(ByteBuffer.wrap(bytes));
        }
    }
}
