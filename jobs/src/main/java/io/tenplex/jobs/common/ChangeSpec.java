package io.tenplex.jobs.common;

import java.util.List;
import java.util.Map;

/**
 * What defines a change, for a daemon that plans its own part of it ({@code transform.LocalPlanner}):
 * the job, the change, the step it moves, the model by digest (its description travels once per job),
 * both configurations with the device of every rank, the workers' addresses, the partner copies read
 * when recovering, where the old state is, the link rate that paces reads, and the two-phase
 * completion's participants (the first is the commit point), coordinator and prepared timeout, and
 * the old ranks' saved layouts by digest (each distinct layout's description travels once), and, when
 * recovering around lost workers, the old ranks still being rebuilt from parity on the coordinator's
 * daemon (read last, once published there). No piece is named: its size grows with devices and
 * workers, not with the model.
 */
public record ChangeSpec(String job, String changeId, long step, String modelDigest, ConfigJson.Placed from,
        ConfigJson.Placed to, Map<Integer, String> daemons, Map<Integer, List<Integer>> copies, String sourceDir,
        long linkRate, List<Integer> participants, String coordinator, long preparedTimeoutMillis,
        List<String> layoutDigests, List<Integer> rankLayouts, List<Integer> rebuilding) {

    public ChangeSpec {
        daemons = Map.copyOf(daemons);
        copies = Map.copyOf(copies);
        participants = List.copyOf(participants);
        layoutDigests = List.copyOf(layoutDigests);
        rankLayouts = List.copyOf(rankLayouts);
        rebuilding = List.copyOf(rebuilding);
    }

    /** A change no old rank of which is being rebuilt from parity. */
    public ChangeSpec(String job, String changeId, long step, String modelDigest, ConfigJson.Placed from,
            ConfigJson.Placed to, Map<Integer, String> daemons, Map<Integer, List<Integer>> copies, String sourceDir,
            long linkRate, List<Integer> participants, String coordinator, long preparedTimeoutMillis,
            List<String> layoutDigests, List<Integer> rankLayouts) {
        this(job, changeId, step, modelDigest, from, to, daemons, copies, sourceDir, linkRate, participants, coordinator,
                preparedTimeoutMillis, layoutDigests, rankLayouts, List.of());
    }

    /** Every description the change names: the model's, then the layouts'. */
    public List<String> descriptions() {
        List<String> all = new java.util.ArrayList<>(layoutDigests.size() + 1);
        all.add(modelDigest);
        all.addAll(layoutDigests);
        return all;
    }
}
