package io.tenplex.datasets.hdf5;

import io.jhdf.filter.Filter;
import java.util.Arrays;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * HDF5's deflate filter (id 1) held to the {@link ChunkLimit}: it inflates into a buffer that grows
 * up to the limit and no further, and refuses a stream that would inflate past it (jHDF's own
 * filter inflates without bound: a 1 MB chunk of zeros can claim gigabytes).
 */
final class BoundedInflate implements Filter {
    static final int ID = 1;

    @Override
    public int getId() {
        return ID;
    }

    @Override
    public String getName() {
        return "deflate";
    }

    @Override
    public byte[] decode(byte[] data, int[] filterData) {
        int limit = ChunkLimit.bytes();
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(data);
            byte[] out = new byte[(int) Math.min(limit, Math.max(4096, 4L * data.length))];
            int n = 0;
            while (!inflater.finished()) {
                if (n == out.length) {
                    if (n >= limit) {
                        ChunkLimit.check("deflate", n + 1L); // throws: one byte more than the limit is waiting
                    }
                    out = Arrays.copyOf(out, (int) Math.min(limit, 2L * out.length));
                }
                int k = inflater.inflate(out, n, out.length - n);
                if (k == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new IllegalStateException("a deflate chunk of " + data.length + " bytes ends after "
                            + n + " bytes, before its stream does (corrupt)");
                }
                n += k;
            }
            return n == out.length ? out : Arrays.copyOf(out, n);
        } catch (DataFormatException e) {
            throw new IllegalStateException("a deflate chunk is corrupt: " + e.getMessage(), e);
        } finally {
            inflater.end();
        }
    }
}
