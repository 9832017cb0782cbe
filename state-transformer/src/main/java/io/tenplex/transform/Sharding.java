package io.tenplex.transform;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorSpec;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Cuts whole tensors (plain arrays, logical shapes) into a rank's shards directly, as a parallelizer
 * would: the reference that executed plans are checked against (tests, {@code tenplex demo}).
 */
public final class Sharding {
    private Sharding() {
    }

    /** A shard's bytes with its shape. */
    public record Bytes(Shape shape, byte[] data) {}

    /** Shards of one rank, by key; vocabulary padding is zero, tied copies come from their original. */
    public static Map<String, Bytes> shard(Ptc ptc, Map<String, byte[]> full, int rank) {
        Map<String, Bytes> m = new LinkedHashMap<>();
        for (Ptc.Shard s : ptc.shards(rank)) {
            TensorSpec t = s.spec();
            String src = ptc.model().tiedTo(t.name()) != null ? ptc.model().tiedTo(t.name()) : t.name();
            int item = t.dtype().itemSize();
            byte[] data = new byte[(int) (s.region().volume() * item)];
            s.region().intersect(Region.whole(t.shape())).ifPresent(real -> {
                long[] off = real.offset();
                long[] base = s.region().offset();
                for (int i = 0; i < off.length; i++) {
                    off[i] -= base[i];
                }
                copy(full.get(src), t.shape(), real, data, s.shape(), off, item);
            });
            m.put(s.key(), new Bytes(s.shape(), data));
        }
        return m;
    }

    /** Copies {@code region} of {@code src} to {@code dstOffset} of {@code dst}, run by run (last dimension). */
    public static void copy(byte[] src, Shape srcShape, Region region, byte[] dst, Shape dstShape, long[] dstOffset,
            int item) {
        if (region.isEmpty()) {
            return;
        }
        int rank = srcShape.rank();
        if (rank == 0) {
            System.arraycopy(src, 0, dst, 0, item);
            return;
        }
        long[] ss = srcShape.strides();
        long[] ds = dstShape.strides();
        long[] idx = new long[rank - 1];
        int run = (int) (region.range(rank - 1).size() * item);
        while (true) {
            long s = region.range(rank - 1).start();
            long d = dstOffset[rank - 1];
            for (int k = 0; k < rank - 1; k++) {
                s += (region.range(k).start() + idx[k]) * ss[k];
                d += (dstOffset[k] + idx[k]) * ds[k];
            }
            System.arraycopy(src, (int) (s * item), dst, (int) (d * item), run);
            int k = rank - 2;
            while (k >= 0 && ++idx[k] == region.range(k).size()) {
                idx[k] = 0;
                k--;
            }
            if (k < 0) {
                return;
            }
        }
    }
}
