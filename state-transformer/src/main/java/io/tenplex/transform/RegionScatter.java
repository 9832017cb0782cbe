package io.tenplex.transform;

import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import java.nio.ByteBuffer;

/**
 * Writes the contiguous row-major bytes of a region into its place in a larger row-major buffer, run
 * by run (trailing dimensions the region covers whole are merged into one run). The inverse of a
 * region read.
 */
final class RegionScatter {
    private RegionScatter() {
    }

    /** True when the region occupies one contiguous byte range of {@code shape}. */
    static boolean isContiguous(Region region, Shape shape) {
        int k = firstPartialDim(region, shape);
        for (int d = 0; d < k; d++) {
            if (region.range(d).size() != 1) {
                return region.isEmpty();
            }
        }
        return true;
    }

    /** Byte offset of the region's first element in {@code shape}. */
    static long offset(Region region, Shape shape, int item) {
        long[] strides = shape.strides();
        long off = 0;
        for (int d = 0; d < shape.rank(); d++) {
            off += region.range(d).start() * strides[d];
        }
        return off * item;
    }

    private static int firstPartialDim(Region region, Shape shape) {
        int k = shape.rank() - 1;
        while (k > 0 && region.range(k).size() == shape.dim(k)) {
            k--;
        }
        return k;
    }

    /**
     * Copies {@code src}'s remaining bytes (the region's bytes) into {@code dst} (a buffer holding a
     * tensor of {@code shape}) at the region's place. Uses absolute writes: {@code dst}'s position
     * is untouched, so several threads may scatter disjoint regions into one buffer.
     */
    static void scatter(ByteBuffer src, Region region, Shape shape, ByteBuffer dst, int item) {
        if (region.isEmpty()) {
            return;
        }
        int rank = shape.rank();
        if (rank == 0) {
            dst.put(0, src, src.position(), item);
            return;
        }
        int k = firstPartialDim(region, shape);
        long inner = 1;
        for (int d = k + 1; d < rank; d++) {
            inner *= shape.dim(d);
        }
        int run = (int) (region.range(k).size() * inner * item);
        long[] strides = shape.strides();
        long[] idx = new long[k];
        long base = offset(region, shape, item);
        int from = src.position();
        while (true) {
            long at = base;
            for (int d = 0; d < k; d++) {
                at += idx[d] * strides[d] * item;
            }
            dst.put((int) at, src, from, run);
            from += run;
            int d = k - 1;
            while (d >= 0 && ++idx[d] == region.range(d).size()) {
                idx[d] = 0;
                d--;
            }
            if (d < 0) {
                return;
            }
        }
    }
}
