package io.tenplex.transform;

import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorSpec;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * The oracle: shards plain in-memory tensors under a PTC, and applies a plan to such shards. Used
 * to check that applying a plan gives exactly what sharding directly under the new PTC gives.
 */
public final class ReferenceInterpreter {
    private ReferenceInterpreter() {
    }

    /** A shard's bytes with its shape. */
    public record Bytes(Shape shape, byte[] data) {}

    /** Random full tensors (logical shapes) for every tensor of the PTC's model, from a seed; tied copies equal their original. */
    public static Map<String, byte[]> fullTensors(Ptc ptc, long seed) {
        Random r = new Random(seed);
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (TensorSpec t : ptc.model().tensors()) {
            String tie = ptc.model().tiedTo(t.name());
            if (tie != null) {
                continue; // shard() reads the original for a tied copy
            }
            byte[] b = new byte[(int) (t.shape().volume() * t.dtype().itemSize())];
            r.nextBytes(b);
            out.put(t.name(), b);
        }
        return out;
    }

    /** Shards full tensors directly under a PTC: rank -> key -> bytes (padding zero). */
    public static Map<Integer, Map<String, Bytes>> shard(Ptc ptc, Map<String, byte[]> full) {
        Map<Integer, Map<String, Bytes>> out = new HashMap<>();
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            Map<String, Bytes> m = new LinkedHashMap<>();
            for (Ptc.Shard s : ptc.shards(rank)) {
                TensorSpec t = s.spec();
                String src = ptc.model().tiedTo(t.name()) != null ? ptc.model().tiedTo(t.name()) : t.name();
                int item = t.dtype().itemSize();
                byte[] data = new byte[(int) (s.region().volume() * item)];
                Region logical = Region.whole(t.shape());
                s.region().intersect(logical).ifPresent(real -> copy(full.get(src), t.shape(), real, data,
                        s.shape(), offsetWithin(real, s.region()), item));
                m.put(s.key(), new Bytes(s.shape(), data));
            }
            out.put(rank, m);
        }
        return out;
    }

    /** Applies a plan to shards held under the old PTC; returns the shards of the new one. */
    public static Map<Integer, Map<String, Bytes>> apply(Plan plan, Map<Integer, Map<String, Bytes>> old, Ptc to) {
        Map<Integer, Map<String, Bytes>> out = new HashMap<>();
        for (ShardPlan s : plan.shards()) {
            int item = to.model().tensor(s.tensor()).dtype().itemSize();
            byte[] data = new byte[(int) (s.shape().volume() * item)];
            for (Piece p : s.pieces()) {
                Bytes src = old.get(p.sourceRank()).get(p.sourceKey());
                if (src == null) {
                    throw new AssertionError("rank " + p.sourceRank() + " has no shard " + p.sourceKey());
                }
                copy(src.data(), src.shape(), p.source(), data, s.shape(), p.destOffset(), item);
            }
            out.computeIfAbsent(s.destRank(), k -> new LinkedHashMap<>()).put(s.key(), new Bytes(s.shape(), data));
        }
        for (int rank = 0; rank < to.worldSize(); rank++) {
            out.computeIfAbsent(rank, k -> new LinkedHashMap<>());
        }
        return out;
    }

    private static long[] offsetWithin(Region inner, Region outer) {
        long[] o = inner.offset();
        long[] b = outer.offset();
        for (int i = 0; i < o.length; i++) {
            o[i] -= b[i];
        }
        return o;
    }

    /** Copies {@code region} of {@code src} to {@code dstOffset} of {@code dst}, run by run (last dimension). */
    public static void copy(byte[] src, Shape srcShape, Region region, byte[] dst, Shape dstShape, long[] dstOffset, int item) {
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
