package io.tenplex.datasets.adios2;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Assembles one row of a global array (its slice at one index of the first dimension) from the blocks
 * of a step that hold parts of it: each such block's slab for that row is read whole from its subfile,
 * then its runs along the last dimension are put where they lie in the row (row-major). Stateless.
 */
final class RowAssembly {
    private RowAssembly() {}

    /**
     * Writes row {@code i} into {@code row} (exactly the row's bytes remaining, from position 0).
     *
     * @param blocks the step's blocks, sorted by their start in the first dimension
     */
    static void row(List<Adios2Variable.Block> blocks, long[] shape, int elem, long i, ByteBuffer row, DataFiles data,
            String url) throws IOException {
        int nd = shape.length;
        long[] stride = new long[nd]; // bytes per index of each dimension within a row
        stride[nd - 1] = elem;
        for (int d = nd - 2; d >= 1; d--) {
            stride[d] = stride[d + 1] * shape[d + 1];
        }
        for (Adios2Variable.Block b : blocks) {
            long s0 = b.start()[0];
            if (s0 > i) {
                break;
            }
            if (i >= s0 + b.count()[0] || volume(b.count()) == 0) {
                continue;
            }
            long slabBytes = elem;
            for (int d = 1; d < nd; d++) {
                slabBytes *= b.count()[d];
            }
            ByteBuffer slab = ByteBuffer.allocate((int) slabBytes);
            Adios2Array.readFile(data.channel(b.subfile()), b.pos() + (i - s0) * slabBytes, slab);
            scatter(b, nd, elem, stride, slab.array(), row);
        }
    }

    private static void scatter(Adios2Variable.Block b, int nd, int elem, long[] stride, byte[] slab, ByteBuffer row) {
        if (nd == 1) {
            row.put(0, slab, 0, elem);
            return;
        }
        int run = (int) (b.count()[nd - 1] * elem);
        long[] idx = new long[nd]; // the index within the block of dimensions 1 .. nd-2
        for (int src = 0; src < slab.length; src += run) {
            long dst = (b.start()[nd - 1]) * elem;
            for (int d = 1; d < nd - 1; d++) {
                dst += (b.start()[d] + idx[d]) * stride[d];
            }
            row.put((int) dst, slab, src, run);
            for (int d = nd - 2; d >= 1 && ++idx[d] == b.count()[d]; d--) {
                idx[d] = 0;
            }
        }
    }

    private static long volume(long[] count) {
        long v = 1;
        for (long c : count) {
            v *= c;
        }
        return v;
    }
}
