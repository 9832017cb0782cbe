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
            Sharding.shard(ptc, full, rank).forEach((k, v) -> m.put(k, new Bytes(v.shape(), v.data())));
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

    /** Copies {@code region} of {@code src} to {@code dstOffset} of {@code dst}. */
    public static void copy(byte[] src, Shape srcShape, Region region, byte[] dst, Shape dstShape, long[] dstOffset,
            int item) {
        Sharding.copy(src, srcShape, region, dst, dstShape, dstOffset, item);
    }
}
