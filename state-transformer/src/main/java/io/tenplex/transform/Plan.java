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

    Plan(ParallelConfig from, ParallelConfig to, List<ShardPlan> shards, List<ValueCopy> values, PlanReport report,
            List<io.tenplex.ptc.Device> sourceDevices) {
        this.sourceDevices = List.copyOf(sourceDevices);
        this.from = from;
        this.to = to;
        this.shards = List.copyOf(shards);
        this.values = List.copyOf(values);
        this.report = report;
    }

    public ParallelConfig from() {
        return from;
    }

    public ParallelConfig to() {
        return to;
    }

    /** Destination shards in rank order, then model order. */
    public List<ShardPlan> shards() {
        return shards;
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
