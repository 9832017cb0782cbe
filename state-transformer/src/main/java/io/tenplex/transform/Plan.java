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

    Plan(ParallelConfig from, ParallelConfig to, List<ShardPlan> shards, List<ValueCopy> values, PlanReport report,
            List<io.tenplex.ptc.Device> sourceDevices, List<io.tenplex.ptc.Device> destDevices,
            java.util.Set<String> sourceTensorKeys) {
        this.sourceTensorKeys = java.util.Set.copyOf(sourceTensorKeys);
        this.sourceDevices = List.copyOf(sourceDevices);
        this.destDevices = List.copyOf(destDevices);
        this.from = from;
        this.to = to;
        this.shards = shards instanceof PlanTable ? shards : List.copyOf(shards); // a table is immutable already
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
        if (shards instanceof PlanTable t) {
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

    /** Pieces in all destination shards. */
    public long pieceCount() {
        if (shards instanceof PlanTable t) {
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
     * {@code destPath} a destination shard's, and {@code values} replaces the value copies.
     *
     * @throws IllegalArgumentException when no holder of a piece stores it
     */
    public Plan withPaths(java.util.function.BiFunction<Integer, String, String> sourcePath,
            java.util.function.Function<ShardPlan, String> destPath, List<ValueCopy> values) {
        List<ShardPlan> out = new java.util.ArrayList<>(shards.size());
        for (ShardPlan s : shards) {
            List<Piece> pieces = new java.util.ArrayList<>(s.pieces().size());
            for (Piece p : s.pieces()) {
                List<Integer> holders = new java.util.ArrayList<>();
                String path = null;
                for (int r : candidates(p)) {
                    String at = sourcePath.apply(r, p.sourceKey());
                    if (at == null) {
                        continue;
                    }
                    if (path != null && !path.equals(at)) {
                        throw new IllegalArgumentException("ranks " + holders.get(0) + " and " + r + " store "
                                + p.sourceKey() + " under different paths: " + path + ", " + at);
                    }
                    path = at;
                    holders.add(r);
                }
                if (path == null) {
                    throw new IllegalArgumentException("no rank of " + java.util.Arrays.toString(candidates(p))
                            + " saved " + p.sourceKey() + " (needed by rank " + s.destRank() + ")");
                }
                int rank = holders.get(0);
                io.tenplex.ptc.Device d = rank == p.sourceRank() && p.sourceDevice() != null ? p.sourceDevice()
                        : sourceDevices.get(rank); // the piece's own source: a copy of the rank's tree, when recovering
                Piece.Kind kind = rank == p.sourceRank() ? p.kind()
                        : d.equals(s.destDevice()) ? Piece.Kind.SPLIT
                                : d.worker() == s.destDevice().worker() ? Piece.Kind.LOCAL : Piece.Kind.REMOTE;
                pieces.add(new Piece(kind, rank, d, path, p.source(), p.global(), p.destOffset(), p.bytes(),
                        holders.stream().sorted().mapToInt(Integer::intValue).toArray()));
            }
            out.add(new ShardPlan(s.destRank(), s.destDevice(), s.tensor(), destPath.apply(s), s.shape(), s.dtype(),
                    pieces, s.padding()));
        }
        return new Plan(from, to, out, values, report, sourceDevices, destDevices, sourceTensorKeys);
    }

    /** The piece's chosen rank first, then its other replicas. */
    private static int[] candidates(Piece p) {
        int[] r = p.replicas();
        int[] out = new int[r.length + 1];
        out[0] = p.sourceRank();
        int n = 1;
        for (int x : r) {
            if (x != p.sourceRank()) {
                out[n++] = x;
            }
        }
        return java.util.Arrays.copyOf(out, n);
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
