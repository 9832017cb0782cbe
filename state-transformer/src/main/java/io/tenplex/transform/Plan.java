package io.tenplex.transform;

import io.tenplex.ptc.ParallelConfig;
import java.util.List;

/**
 * An immutable reconfiguration plan from one PTC to another: for every destination device and
 * shard the pieces that tile it (split, move and merge in the paper's words), the padding to add,
 * and the non-tensor values to copy. Built by {@link Planner}; executed elsewhere.
 */
public final class Plan {
    private static final int PRINT_SHARDS = 200;

    private final ParallelConfig from;
    private final ParallelConfig to;
    private final List<ShardPlan> shards;
    private final List<ValueCopy> values;
    private final PlanReport report;
    private final List<io.tenplex.ptc.Device> sourceDevices;
    private final List<io.tenplex.ptc.Device> destDevices;
    private final java.util.Set<String> sourceTensorKeys;
    /** Per new rank its first shard's index ({@link #rankStarts}), computed when first needed. */
    private volatile int[] rankStarts;

    Plan(ParallelConfig from, ParallelConfig to, List<ShardPlan> shards, List<ValueCopy> values, PlanReport report,
            List<io.tenplex.ptc.Device> sourceDevices, List<io.tenplex.ptc.Device> destDevices,
            java.util.Set<String> sourceTensorKeys) {
        this.sourceTensorKeys = java.util.Set.copyOf(sourceTensorKeys);
        this.sourceDevices = List.copyOf(sourceDevices);
        this.destDevices = List.copyOf(destDevices);
        this.from = from;
        this.to = to;
        this.shards = shards instanceof PlanTable || shards instanceof BoundShards ? shards
                : List.copyOf(shards); // a table and a bound view are immutable already
        this.values = List.copyOf(values);
        this.report = report;
    }

    public ParallelConfig from() {
        return from;
    }

    public ParallelConfig to() {
        return to;
    }

    /**
     * Destination shards in rank order, then model order. Unmodifiable; a planner's plan builds each
     * shard when it is read (read each once where the plan is large).
     */
    public List<ShardPlan> shards() {
        return shards;
    }

    /**
     * The workers of the destination devices, ascending (read without building the shards): every new
     * rank's worker, also of ranks that get no tensor (only values and files, e.g. a state without tensors).
     */
    public List<Integer> destWorkers() {
        java.util.TreeSet<Integer> w = new java.util.TreeSet<>();
        destDevices.forEach(d -> w.add(d.worker()));
        List<ShardPlan> l = shards instanceof BoundShards b ? b.base : shards;
        if (l instanceof PlanTable t) {
            w.addAll(t.destWorkers());
        } else {
            shards.forEach(s -> w.add(s.destDevice().worker()));
        }
        return List.copyOf(w);
    }

    /**
     * The keys the old configuration's ranks hold the model's tensors under (a stage's own keys): a
     * saved tensor the new configuration does not read (e.g. a tied head at P = 1) is the model's, not a
     * value to carry.
     */
    public java.util.Set<String> sourceTensorKeys() {
        return sourceTensorKeys;
    }

    /** Whether its keys are bound to stored paths ({@link #withPaths}). */
    public boolean isBound() {
        return shards instanceof BoundShards;
    }

    /** Pieces in all destination shards. */
    public long pieceCount() {
        List<ShardPlan> l = shards instanceof BoundShards b ? b.base : shards;
        if (l instanceof PlanTable t) {
            return t.pieces();
        }
        return shards.stream().mapToLong(s -> s.pieces().size()).sum();
    }

    public List<ValueCopy> values() {
        return values;
    }

    public PlanReport report() {
        return report;
    }

    /** The device of a rank of the old configuration (to reach any replica of a piece). */
    public io.tenplex.ptc.Device sourceDevice(int rank) {
        return sourceDevices.get(rank);
    }

    /**
     * The same plan with stored paths for its keys: {@code sourcePath} names a source rank's key
     * (every replica must store it under the same path; a rank for which it answers null holds no
     * copy and is dropped from the replicas, and a piece moves to a replica that has one),
     * {@code destPath} a destination shard's, and {@code values} replaces the value copies. Every
     * piece is checked here; the bound plan then binds each shard again when it is read (its shards
     * are not kept), so both functions must answer the same for the same arguments every time.
     *
     * @throws IllegalArgumentException when no holder of a piece stores it
     */
    public Plan withPaths(java.util.function.BiFunction<Integer, String, String> sourcePath,
            java.util.function.Function<ShardPlan, String> destPath, List<ValueCopy> values) {
        return withPaths(sourcePath, destPath, values, false);
    }

    /**
     * As {@link #withPaths(java.util.function.BiFunction, java.util.function.Function, List)}; with
     * {@code keep}, the shards bound in the check are kept and not bound again when read (for a plan of
     * one daemon's part, which holds its shards anyway; a whole plan's would not fit).
     */
    public Plan withPaths(java.util.function.BiFunction<Integer, String, String> sourcePath,
            java.util.function.Function<ShardPlan, String> destPath, List<ValueCopy> values, boolean keep) {
        List<ShardPlan> base = shards instanceof BoundShards b ? b.base : shards;
        BoundShards bound = new BoundShards(base, sourceDevices, sourcePath, destPath);
        if (keep) {
            bound.keepAll();
        } else {
            bound.checkAll();
        }
        return new Plan(from, to, bound, values, report, sourceDevices, destDevices, sourceTensorKeys);
    }

    /**
     * The destination shards on {@code worker}'s devices, in plan order: a read-only view whose
     * shards are built when read (what one daemon's part holds), found without building the others.
     */
    public List<ShardPlan> shardsOf(int worker) {
        int[] at = indicesOf(worker);
        return new java.util.AbstractList<>() {
            @Override
            public ShardPlan get(int i) {
                return shards.get(at[i]);
            }

            @Override
            public int size() {
                return at.length;
            }
        };
    }

    /** Pieces in the destination shards on {@code worker}'s devices, counted without building them. */
    public long pieceCountOf(int worker) {
        long n = 0;
        for (int i : indicesOf(worker)) {
            n += piecesAt(i);
        }
        return n;
    }

    private int[] indicesOf(int worker) {
        int[] start = rankStarts();
        IntList out = new IntList(16);
        if (start == null) {
            for (int i = 0; i < shards.size(); i++) {
                if (destDevices.get(rankAt(i)).worker() == worker) {
                    out.add(i);
                }
            }
            return out.toArray();
        }
        for (int r = 0; r + 1 < start.length; r++) {
            if (destDevices.get(r).worker() == worker) {
                for (int i = start[r]; i < start[r + 1]; i++) {
                    out.add(i);
                }
            }
        }
        return out.toArray();
    }

    /** Per new rank the index of its first shard, the shard count last; null when shards are not in rank order. */
    private int[] rankStarts() {
        int[] s = rankStarts;
        if (s == null && destDevices.size() > 0) {
            s = new int[destDevices.size() + 1];
            int next = 0;
            for (int i = 0; i < shards.size(); i++) {
                int r = rankAt(i);
                if (r < next - 1 || r >= destDevices.size()) {
                    return null;
                }
                while (next <= r) {
                    s[next++] = i;
                }
            }
            while (next <= destDevices.size()) {
                s[next++] = shards.size();
            }
            rankStarts = s;
        }
        return s;
    }

    private int rankAt(int i) {
        List<ShardPlan> l = shards instanceof BoundShards b ? b.base : shards;
        return l instanceof PlanTable t ? t.rankAt(i) : l.get(i).destRank();
    }

    private int piecesAt(int i) {
        List<ShardPlan> l = shards instanceof BoundShards b ? b.base : shards;
        return l instanceof PlanTable t ? t.piecesAt(i) : l.get(i).pieces().size();
    }

    /** True when no byte has to be copied or moved: every destination shard is already in place. */
    public boolean isEmpty() {
        return report.onDevice() == 0 && report.intraWorker() == 0 && report.interWorker() == 0;
    }

    /** Reads like the paper's Fig. 7: per destination shard, the pieces it is made of (first shards only). */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("plan ").append(from).append(" -> ").append(to).append(": ")
                .append(shards.size()).append(" destination shards, ").append(values.size()).append(" value copies\n  ")
                .append(report).append('\n');
        int n = 0;
        for (ShardPlan s : shards) {
            if (n++ == PRINT_SHARDS) {
                b.append("... ").append(shards.size() - PRINT_SHARDS).append(" more shards\n");
                break;
            }
            b.append("rank ").append(s.destRank()).append(" (").append(s.destDevice()).append(") ").append(s.key())
                    .append(' ').append(s.shape()).append(s.isMerge() ? " = merge of " + s.pieces().size() : "")
                    .append('\n');
            for (Piece p : s.pieces()) {
                b.append("    ").append(p).append('\n');
            }
            for (io.tenplex.ptc.Region pad : s.padding()) {
                b.append("    pad zeros [").append(pad).append("]\n");
            }
        }
        return b.toString();
    }
}
