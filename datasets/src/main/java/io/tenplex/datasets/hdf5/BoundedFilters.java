package io.tenplex.datasets.hdf5;

import io.jhdf.filter.BitShuffleFilter;
import io.jhdf.filter.ByteShuffleFilter;
import io.jhdf.filter.Filter;
import io.jhdf.filter.FilterManager;
import io.jhdf.filter.LzfFilter;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;

/**
 * Every HDF5 filter jHDF decodes, held to the {@link ChunkLimit}, registered with jHDF's filter
 * manager for every file opened afterwards by {@link #install()}: deflate and LZ4 are decoded here
 * ({@link BoundedInflate}, {@link BoundedLz4}); LZF and bitshuffle have the sizes their filter data
 * or chunk header claim checked before jHDF's decoder allocates them; shuffle keeps a chunk's size;
 * Fletcher-32 is {@link Fletcher32}. What any of them produces is checked against the limit too.
 */
final class BoundedFilters {
    private BoundedFilters() {
    }

    /** Replaces jHDF's decoders with the bounded ones (idempotent). */
    static void install() {
        Holder.INSTALLED.hashCode(); // the holder's class initialisation registers them once
    }

    private static final class Holder {
        static final Object INSTALLED = new Object();

        static {
            Fletcher32.install();
            FilterManager.addFilter(new Checked(new BoundedInflate(), null));
            FilterManager.addFilter(new Checked(new BoundedLz4(), null));
            FilterManager.addFilter(new Checked(new ByteShuffleFilter(), null));
            FilterManager.addFilter(new Checked(new LzfFilter(), BoundedFilters::lzfClaims));
            FilterManager.addFilter(new Checked(new BitShuffleFilter(), BoundedFilters::bitshuffleClaims));
        }
    }

    /** Checks what a chunk or its filter data claim before a decoder believes it. */
    private interface Claims {
        void check(byte[] data, int[] filterData);
    }

    /** A decoder whose claims are checked before it runs and whose output is checked after. */
    private record Checked(Filter filter, Claims claims) implements Filter {
        @Override
        public int getId() {
            return filter.getId();
        }

        @Override
        public String getName() {
            return filter.getName();
        }

        @Override
        public byte[] decode(byte[] data, int[] filterData) {
            if (claims != null) {
                claims.check(data, filterData);
            }
            byte[] out = filter.decode(data, filterData);
            ChunkLimit.check(filter.getName(), out.length);
            return out;
        }
    }

    /** LZF's filter data hold the chunk's size at index 2 ({@code H5Z_FILTER_LZF}); jHDF allocates it. */
    private static void lzfClaims(byte[] data, int[] filterData) {
        if (filterData == null || filterData.length < 3) {
            throw new IllegalStateException("an lzf filter without the chunk size in its filter data (corrupt)");
        }
        ChunkLimit.check("lzf", filterData[2]);
    }

    /**
     * Bitshuffle's filter data hold the element size (2), block size in elements (3) and codec (4);
     * an LZ4 chunk starts {@code u64 size, u32 blockBytes}, then per block {@code u32 length} and its
     * bytes: the sizes are checked against the limit and each length against the bytes left.
     */
    private static void bitshuffleClaims(byte[] data, int[] filterData) {
        if (filterData == null || filterData.length < 5 || filterData[2] <= 0 || filterData[3] < 0) {
            throw new IllegalStateException("a bitshuffle filter with malformed filter data (corrupt)");
        }
        ChunkLimit.check("bitshuffle", (long) filterData[2] * filterData[3]);
        if (filterData[4] != BitShuffleFilter.LZ4_COMPRESSION) {
            return; // uncompressed: sizes follow the chunk's own
        }
        try {
            ByteBuffer in = ByteBuffer.wrap(data);
            long total = ChunkLimit.check("bitshuffle", in.getLong());
            long block = ChunkLimit.check("bitshuffle", Integer.toUnsignedLong(in.getInt()));
            if (block == 0) {
                throw new IllegalStateException("a bitshuffle chunk with a block size of 0 (corrupt)");
            }
            for (long i = 0, blocks = block > total ? 1 : total / block; i < blocks; i++) {
                int length = in.getInt();
                if (length < 0 || length > in.remaining()) {
                    throw new IllegalStateException("a bitshuffle chunk has a block of " + Integer.toUnsignedLong(length)
                            + " bytes with " + in.remaining() + " left (corrupt)");
                }
                in.position(in.position() + length);
            }
        } catch (BufferUnderflowException e) {
            throw new IllegalStateException("a bitshuffle chunk is truncated (corrupt)", e);
        }
    }
}
