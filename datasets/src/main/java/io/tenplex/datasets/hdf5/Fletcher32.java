package io.tenplex.datasets.hdf5;

import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.filter.Filter;
import io.jhdf.filter.FilterManager;
import java.util.Arrays;

/**
 * HDF5's Fletcher-32 filter (id 3) with its checksum verified: jHDF 0.13's own filter passes chunks
 * through unchecked. A chunk so filtered ends with the checksum of the bytes before it, little-endian
 * ({@code H5Z_filter_fletcher32}); reading checks it (also in the byte-swapped form that HDF5 1.6.0
 * to 1.6.2 wrote, which HDF5 accepts) and drops it, or fails with {@link Mismatch}. Registered with
 * jHDF's filter manager, for every file opened afterwards, by {@link #install()}.
 */
final class Fletcher32 implements Filter {
    /** The id of the Fletcher-32 filter in HDF5 filter pipelines. */
    static final int ID = 3;
    private static final long U32 = 0xffffffffL; // the C code's uint32_t arithmetic

    /** A chunk whose bytes do not match its Fletcher-32 checksum. */
    static final class Mismatch extends RuntimeException {
        Mismatch(String message) {
            super(message);
        }
    }

    private Fletcher32() {
    }

    /** Makes jHDF check Fletcher-32 checksums (idempotent). */
    static void install() {
        Holder.INSTALLED.hashCode(); // the holder's class initialisation registers the filter once
    }

    private static final class Holder {
        static final Object INSTALLED = new Object();

        static {
            FilterManager.addFilter(new Fletcher32());
        }
    }

    @Override
    public int getId() {
        return ID;
    }

    @Override
    public String getName() {
        return "fletcher32";
    }

    @Override
    public byte[] decode(byte[] data, int[] filterData) {
        if (data.length < 4) {
            throw new Mismatch("a chunk of " + data.length + " bytes has no Fletcher-32 checksum");
        }
        int n = data.length - 4;
        int stored = (data[n] & 0xff) | (data[n + 1] & 0xff) << 8 | (data[n + 2] & 0xff) << 16 | (data[n + 3] & 0xff) << 24;
        int sum = checksum(data, n);
        int swapped = (sum & 0x00ff00ff) << 8 | (sum >>> 8) & 0x00ff00ff;
        if (stored != sum && stored != swapped) {
            throw new Mismatch(String.format("Fletcher-32 checksum 0x%08x stored, 0x%08x computed over %d bytes", stored, sum, n));
        }
        return Arrays.copyOf(data, n);
    }

    /**
     * HDF5's {@code H5_checksum_fletcher32} of {@code data[0, length)}: big-endian 16-bit words, an
     * odd last byte as the high half of one more, sums reduced every 360 words, in 32-bit arithmetic.
     */
    static int checksum(byte[] data, int length) {
        long sum1 = 0;
        long sum2 = 0;
        int words = length / 2;
        int at = 0;
        while (words > 0) {
            int run = Math.min(words, 360);
            words -= run;
            for (int i = 0; i < run; i++, at += 2) {
                sum1 = sum1 + ((data[at] & 0xff) << 8 | data[at + 1] & 0xff) & U32;
                sum2 = sum2 + sum1 & U32;
            }
            sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
            sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        }
        if (length % 2 != 0) {
            sum1 = sum1 + ((data[at] & 0xff) << 8) & U32;
            sum2 = sum2 + sum1 & U32;
            sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
            sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        }
        sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        return (int) (sum2 << 16 | sum1);
    }

    /**
     * The first chunk of rows {@code [first, first + n)} of {@code ds} that fails its checksum, as
     * {@code chunk [8, 0]: <why>}, or null if none does (chunks that cannot be read for another
     * reason are skipped).
     */
    static String failing(ChunkedDataset ds, long first, int n) {
        long[] dims = ds.getDimensionsAsLong();
        int[] chunk = ds.getChunkDimensions();
        int[] at = new int[dims.length];
        for (long r = first / chunk[0] * chunk[0]; r < first + n; r += chunk[0]) {
            at[0] = (int) r;
            do {
                try {
                    ds.getDecompressedChunk(at);
                } catch (RuntimeException e) {
                    Mismatch m = cause(e);
                    if (m != null) {
                        return "chunk " + Arrays.toString(at) + ": " + m.getMessage();
                    }
                }
            } while (nextInner(at, dims, chunk));
        }
        return null;
    }

    /** The {@link Mismatch} that caused {@code e}, or null. */
    static Mismatch cause(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof Mismatch m) {
                return m;
            }
        }
        return null;
    }

    /** Steps the inner chunk coordinates; false when they wrap around to 0. */
    private static boolean nextInner(int[] at, long[] dims, int[] chunk) {
        for (int d = dims.length - 1; d > 0; d--) {
            at[d] += chunk[d];
            if (at[d] < dims[d]) {
                return true;
            }
            at[d] = 0;
        }
        return false;
    }
}
