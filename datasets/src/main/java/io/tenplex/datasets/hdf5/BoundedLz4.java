package io.tenplex.datasets.hdf5;

import io.jhdf.filter.Filter;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * HDF5's LZ4 filter (id 32004, {@code HDF5_LZ4.pdf}) held to the {@link ChunkLimit}: a chunk is
 * {@code u64 size, u32 blockSize} (big-endian), then per block {@code u32 length} and its bytes
 * (LZ4 compressed, or raw when the length is the block's size). The sizes in the header are checked
 * against the limit and every length against the bytes left before anything is allocated (jHDF's
 * own filter allocates whatever the header claims), and each block decodes to exactly its size.
 */
final class BoundedLz4 implements Filter {
    static final int ID = 32004;
    private static final LZ4SafeDecompressor LZ4 = LZ4Factory.fastestJavaInstance().safeDecompressor();

    @Override
    public int getId() {
        return ID;
    }

    @Override
    public String getName() {
        return "lz4";
    }

    @Override
    public byte[] decode(byte[] data, int[] filterData) {
        try {
            ByteBuffer in = ByteBuffer.wrap(data);
            int total = ChunkLimit.check("lz4", in.getLong());
            int block = in.getInt();
            if (block <= 0 && total > 0) {
                throw corrupt("a block size of " + Integer.toUnsignedString(block));
            }
            byte[] out = new byte[total];
            for (int at = 0; at < total; ) {
                int n = Math.min(block, total - at);
                int length = in.getInt();
                if (length < 0 || length > in.remaining()) {
                    throw corrupt("a block of " + Integer.toUnsignedLong(length) + " bytes with " + in.remaining() + " left");
                }
                if (length == n) {
                    in.get(out, at, n);
                } else {
                    int got = LZ4.decompress(data, in.position(), length, out, at, n);
                    if (got != n) {
                        throw corrupt("a block that decodes to " + got + " bytes instead of " + n);
                    }
                    in.position(in.position() + length);
                }
                at += n;
            }
            return out;
        } catch (BufferUnderflowException | LZ4Exception e) {
            throw corrupt("a truncated or malformed block (" + e + ")");
        }
    }

    private static IllegalStateException corrupt(String what) {
        return new IllegalStateException("an lz4 chunk has " + what + " (corrupt)");
    }
}
