package io.tenplex.transform;

import io.tenplex.ptc.IndexRange;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Computes the plan that turns the state held under one PTC into the state under another.
 *
 * <p>For every destination shard, the source cells (the distinct regions of the old partitioning)
 * that overlap it give its pieces. Each piece is taken from the destination device itself when it
 * holds it, else from another device of the same worker, else from a remote worker; remote pieces
 * are assigned largest first to the replica whose worker has sent the least so far, so that the
 * most loaded sender sends as little as possible. A destination shard that its device already holds
 * exactly is kept in place. Vocabulary rows beyond the real vocabulary are padding (zero).
 *
 * <p>{@link PlanBuilder} makes these choices over primitive arrays ({@link PlanTable}): the plan's
 * shards are built when read, so a plan of millions of pieces fits a small heap.
 */
public final class Planner {
    private Planner() {
    }

    public static Plan plan(Ptc from, Ptc to) {
        return plan(from, to, java.util.Map.of());
    }

    /**
     * As {@link #plan(Ptc, Ptc)}, where other workers also keep complete copies of old ranks' trees
     * (partner copies, when recovering around lost workers): a copy counts as its rank on that worker,
     * so a piece is read from a copy on the destination's worker, and remote pieces are balanced over
     * the copies' workers too. Such a piece names its rank, and as its source device a device of its
     * own on the copy's worker ({@code max local + 1 + rank}).
     *
     * @param copies per old rank, the workers keeping a complete copy of its tree
     */
    public static Plan plan(Ptc from, Ptc to, java.util.Map<Integer, List<Integer>> copies) {
        checkSameModel(from, to);
        PlanBuilder b = new PlanBuilder(from, to, copies);
        PlanTable shards = b.build();
        return new Plan(from.config(), to.config(), shards, values(from, to), b.report(), from.devices(), to.devices(),
                tensorKeys(from));
    }

    static Piece piece(Ptc from, TensorSpec t, Region cell, Region global, Region dest, int[] holders) {
        int rank = holders[0];
        long[] neg = negate(cell.offset());
        long[] destOffset = global.offset();
        long[] d0 = dest.offset();
        for (int i = 0; i < destOffset.length; i++) {
            destOffset[i] -= d0[i];
        }
        return new Piece(Piece.Kind.REMOTE, rank, from.device(rank), sourceKey(from, t), global.shift(neg), global,
                destOffset, global.volume() * t.dtype().itemSize(), holders);
    }

    /** The keys of every tensor of the old configuration's model, as its ranks hold them. */
    static java.util.Set<String> tensorKeys(Ptc from) {
        java.util.Set<String> keys = new java.util.HashSet<>();
        from.model().tensors().forEach(t -> keys.add(from.key(t)));
        return keys;
    }

    /** The key of the tensor on its stage of the old configuration (the same for all its holders). */
    private static String sourceKey(Ptc from, TensorSpec t) {
        return from.key(t);
    }

    private static long[] negate(long[] v) {
        long[] n = new long[v.length];
        for (int i = 0; i < v.length; i++) {
            n[i] = -v[i];
        }
        return n;
    }

    /** The cells of the old partitioning that can overlap {@code r}, computed, not searched. */
    static int[] overlappingCells(Ptc from, TensorSpec t, Region r) {
        int cells = from.cells(t);
        if (cells == 1) {
            return new int[] {0};
        }
        int dim = Partition.splitDim(t.partition());
        long part = from.storedShape(t).dim(dim) / cells;
        IndexRange along = r.range(dim);
        if (part == 0 || along.isEmpty() || along.start() >= part * cells) {
            return new int[0];
        }
        int first = (int) (along.start() / part);
        int last = (int) Math.min(cells - 1, (along.stop() - 1) / part);
        int[] out = new int[last - first + 1];
        for (int i = 0; i < out.length; i++) {
            out[i] = first + i;
        }
        return out;
    }

    /** The part of a destination shard beyond the logical tensor (vocabulary padding), in shard coordinates. */
    static List<Region> padding(Region shard, Region logical) {
        for (int d = 0; d < shard.rank(); d++) {
            long realStop = logical.range(d).stop();
            IndexRange r = shard.range(d);
            if (r.stop() > realStop) {
                long from = Math.max(r.start(), realStop);
                Region pad = shard.with(d, IndexRange.of(from, r.stop()));
                return List.of(pad.shift(negate(shard.offset())));
            }
        }
        return List.of();
    }

    private static List<ValueCopy> values(Ptc from, Ptc to) {
        List<ValueCopy> out = new ArrayList<>();
        for (int rank = 0; rank < to.worldSize(); rank++) {
            RankLayout.Coord c = to.layout().coord(rank, to.config());
            for (ValueSpec v : to.model().values()) {
                int src = from.valueSource(v, c.tp(), c.dp(), c.pp());
                out.add(new ValueCopy(rank, v.key(), src, from.device(src)));
            }
        }
        return out;
    }

    /** Per new tensor (model order), the index of the old tensor it is made from ({@link #source}). */
    static int[] sourceOf(Ptc from, Ptc to) {
        Map<TensorSpec, Integer> fromIndex = new java.util.IdentityHashMap<>();
        for (TensorSpec t : from.model().tensors()) {
            fromIndex.put(t, fromIndex.size());
        }
        List<TensorSpec> toTensors = to.model().tensors();
        int[] out = new int[toTensors.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = fromIndex.get(source(from, to, toTensors.get(i).name()));
        }
        return out;
    }

    /** The old tensor a new one is made from: itself, or the original of a tied copy the old model lacks. */
    static TensorSpec source(Ptc from, Ptc to, String name) {
        if (from.model().has(name)) {
            return from.model().tensor(name);
        }
        String tie = to.model().tiedTo(name);
        if (tie != null && from.model().has(tie)) {
            return from.model().tensor(tie);
        }
        throw new IllegalArgumentException("tensor " + name + " of the new configuration has no source in the old one");
    }

    static void checkSameModel(Ptc from, Ptc to) {
        for (TensorSpec t : to.model().tensors()) {
            TensorSpec s = source(from, to, t.name());
            if (!s.shape().equals(t.shape()) || s.dtype() != t.dtype() || !s.partition().equals(t.partition())) {
                throw new IllegalArgumentException("tensor " + t.name() + " is " + s.dtype().wireName() + s.shape() + " "
                        + s.partition() + " in the old model but " + t.dtype().wireName() + t.shape() + " "
                        + t.partition() + " in the new one");
            }
        }
    }
}
