package io.tenplex.jobs.reconfigure;

import io.tenplex.ptc.Ptc;
import io.tenplex.store.memory.SharedArena;
import io.tenplex.transform.Executor;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.ShardPlan;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The shared memory a change planned ahead will take on one worker, in the order it takes it: a
 * segment for each rank there that saves (the first of each set of data-parallel replicas: they hold
 * the same shards, and the others seal empty), then the move's segment for the new shards it places
 * there (those the plan keeps in place from a replica that saved nothing are assembled too).
 * Touched while the job trains ({@link io.tenplex.store.memory.SharedSegments#prewarm(List)}), the
 * save and the move then write into memory that is already touched.
 */
public final class SegmentsAhead {
    /**
     * Room a save takes beyond its shards' layout: its values and files (the step, small scalars) and
     * per-tensor alignment that the model's shards do not show (an optimizer's step counters).
     */
    static final long SAVE_SLACK = 1 << 20;
    /** Saving ranks' segments touched ahead on one worker, at most (a worker has a few devices). */
    static final int MAX_SAVES = 64;
    /** The most alignment {@link SharedArena#layout} puts before a tensor. */
    private static final long ALIGN = 4096;

    private SegmentsAhead() {
    }

    /**
     * Data bytes of each segment, the saves' first (with {@code saves}; at most {@link #MAX_SAVES} of
     * them, ranks with nothing to save left out); empty when nothing was planned. A size past
     * {@code Long.MAX_VALUE} is that (the segments take it as too large to make).
     */
    public static List<Long> sizes(Plan plan, Ptc from, int worker, boolean saves) {
        List<Long> sizes = new ArrayList<>();
        if (plan == null) {
            return sizes;
        }
        if (from != null && saves) {
            for (int rank : from.ranksOnWorker(worker)) {
                if (sizes.size() < MAX_SAVES && saves(from, rank)) {
                    long bytes = layout(from.shards(rank).stream().mapToLong(Ptc.Shard::bytes).toArray());
                    if (bytes > 0) {
                        sizes.add(add(bytes, Math.max(SAVE_SLACK, bytes / 128)));
                    }
                }
            }
        }
        List<ShardPlan> mine = plan.shards().stream().filter(s -> s.destDevice().worker() == worker).toList();
        List<Long> moved = new ArrayList<>();
        for (long b : Executor.newShardSizes(mine)) {
            moved.add(b);
        }
        moved.addAll(keptFromReplicas(mine, from));
        if (!moved.isEmpty()) {
            sizes.add(layout(moved.stream().mapToLong(Long::longValue).toArray()));
        }
        return sizes;
    }

    /** {@link SharedArena#layout}, or {@code Long.MAX_VALUE} when the sizes add up to more than a quarter of it. */
    private static long layout(long[] sizes) {
        long sum = 0;
        for (long b : sizes) {
            sum = add(sum, add(b, ALIGN)); // each at most a page of alignment before it
        }
        return sum > Long.MAX_VALUE / 4 ? Long.MAX_VALUE : SharedArena.layout(sizes, 0);
    }

    private static long add(long a, long b) {
        long s = a + b;
        return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
    }

    /** Whether {@code rank} saves its shards: the first of its data-parallel replicas (the others seal empty). */
    private static boolean saves(Ptc from, int rank) {
        return from.layout().coord(rank, from.config()).dp() == 0;
    }

    /**
     * The shards the plan keeps in place from a data-parallel replica that does not save: the move
     * assembles them from the replica that does (once for the ranks that need the same bytes).
     */
    private static List<Long> keptFromReplicas(List<ShardPlan> mine, Ptc from) {
        List<Long> sizes = new ArrayList<>();
        if (from == null) {
            return sizes;
        }
        Set<String> seen = new HashSet<>();
        for (ShardPlan s : mine) {
            if (s.pieces().size() == 1 && s.pieces().get(0).kind() == Piece.Kind.KEEP
                    && !saves(from, s.pieces().get(0).sourceRank()) && seen.add(s.key() + " " + s.shape())) {
                sizes.add(s.byteSize());
            }
        }
        return sizes;
    }
}
