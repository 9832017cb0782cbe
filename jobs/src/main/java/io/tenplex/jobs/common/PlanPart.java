package io.tenplex.jobs.common;

import io.tenplex.ptc.Device;
import io.tenplex.transform.ShardPlan;
import java.util.List;
import java.util.Map;

/**
 * One worker's part of a reconfiguration's plan, as the coordinator hands it to that worker's
 * daemon: the shards it assembles, the values it copies, the small files it writes, where the old
 * ranks live, and how its participants resolve an outcome in doubt. Immutable.
 *
 * @param daemons every worker's daemon address ({@code host:port})
 * @param sourceDir where the old shards are, relative to the job ({@code save}, a generation dir)
 * @param outputDir the staged tree below {@code staging/<plan>/} ({@code load}, or {@code central})
 * @param sourceDevices the device of every old rank, indexed by rank
 * @param flowRates bits/s per source worker when flows are paced (empty: left to TCP)
 * @param participants the workers of the same plan, the commit point first (empty: unknown)
 * @param coordinator the coordinating daemon's {@code host:port}, or empty
 * @param reconfiguration the coordinator's id of the reconfiguration, or empty
 * @param preparedTimeoutMillis how long a prepared part waits for the decision (0: the daemon's default)
 * @param rebuilding old ranks still being rebuilt from parity on their source device's daemon: read
 *     last, once their replica manifest ({@code <sourceDir>/manifests/<rank>.json}) is published
 */
public record PlanPart(String job, String planId, int worker, long step, Map<Integer, String> daemons,
        String sourceDir, String outputDir, List<ShardPlan> shards, List<Value> values, List<Generated> generated,
        List<Device> sourceDevices, Map<Integer, Long> flowRates, List<Integer> participants, String coordinator,
        String reconfiguration, long preparedTimeoutMillis, List<Integer> rebuilding) {

    /** A non-tensor value (or a tensor inside one) copied whole from a source rank. */
    public record Value(int destRank, String key, int sourceRank) {
    }

    /** A small file the new layout needs that no old rank has (UTF-8 text). */
    public record Generated(int destRank, String path, String content) {
    }

    public PlanPart {
        daemons = Map.copyOf(daemons);
        shards = List.copyOf(shards);
        values = List.copyOf(values);
        generated = List.copyOf(generated);
        sourceDevices = List.copyOf(sourceDevices);
        flowRates = Map.copyOf(flowRates);
        participants = List.copyOf(participants);
        rebuilding = rebuilding == null ? List.of() : List.copyOf(rebuilding);
    }

    /** The same part with the coordination fields the coordinator adds before sending it. */
    public PlanPart coordinated(List<Integer> participants, String coordinator, String reconfiguration,
            long preparedTimeoutMillis) {
        return new PlanPart(job, planId, worker, step, daemons, sourceDir, outputDir, shards, values, generated,
                sourceDevices, flowRates, participants, coordinator, reconfiguration, preparedTimeoutMillis, rebuilding);
    }

    /** The same part with its flows paced at these rates (bits/s per source worker). */
    public PlanPart withFlowRates(Map<Integer, Long> rates) {
        return new PlanPart(job, planId, worker, step, daemons, sourceDir, outputDir, shards, values, generated,
                sourceDevices, rates, participants, coordinator, reconfiguration, preparedTimeoutMillis, rebuilding);
    }

    /** The same part reading these old ranks last, once their rebuild is published. */
    public PlanPart withRebuilding(List<Integer> ranks) {
        return new PlanPart(job, planId, worker, step, daemons, sourceDir, outputDir, shards, values, generated,
                sourceDevices, flowRates, participants, coordinator, reconfiguration, preparedTimeoutMillis, ranks);
    }

    /** The job's paths as this part reads and stages them. */
    public JobLayout paths() {
        return new JobLayout(job, sourceDir.isEmpty() ? "save" : sourceDir, outputDir.isEmpty() ? "load" : outputDir);
    }
}
