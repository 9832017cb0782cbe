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
 * workers, not with the model. The workers' addresses may travel by digest too ({@code daemonsDigest},
 * their description sent once, {@code daemons} empty until {@link #withDaemons} fills it from that
 * description); an empty digest: the addresses are in {@code daemons}.
 */
public record ChangeSpec(String job, String changeId, long step, String modelDigest, ConfigJson.Placed from,
        ConfigJson.Placed to, Map<Integer, String> daemons, Map<Integer, List<Integer>> copies, String sourceDir,
        long linkRate, List<Integer> participants, String coordinator, long preparedTimeoutMillis,
        List<String> layoutDigests, List<Integer> rankLayouts, List<Integer> rebuilding, String daemonsDigest) {

    public ChangeSpec {
        daemons = Map.copyOf(daemons);
        copies = Map.copyOf(copies);
        participants = List.copyOf(participants);
        layoutDigests = List.copyOf(layoutDigests);
        rankLayouts = List.copyOf(rankLayouts);
        rebuilding = List.copyOf(rebuilding);
        java.util.Objects.requireNonNull(daemonsDigest, "daemonsDigest");
    }

    /** A change with the workers' addresses in it (no digest for them). */
    public ChangeSpec(String job, String changeId, long step, String modelDigest, ConfigJson.Placed from,
            ConfigJson.Placed to, Map<Integer, String> daemons, Map<Integer, List<Integer>> copies, String sourceDir,
            long linkRate, List<Integer> participants, String coordinator, long preparedTimeoutMillis,
            List<String> layoutDigests, List<Integer> rankLayouts, List<Integer> rebuilding) {
        this(job, changeId, step, modelDigest, from, to, daemons, copies, sourceDir, linkRate, participants, coordinator,
                preparedTimeoutMillis, layoutDigests, rankLayouts, rebuilding, "");
    }

    /** A change no old rank of which is being rebuilt from parity. */
    public ChangeSpec(String job, String changeId, long step, String modelDigest, ConfigJson.Placed from,
            ConfigJson.Placed to, Map<Integer, String> daemons, Map<Integer, List<Integer>> copies, String sourceDir,
            long linkRate, List<Integer> participants, String coordinator, long preparedTimeoutMillis,
            List<String> layoutDigests, List<Integer> rankLayouts) {
        this(job, changeId, step, modelDigest, from, to, daemons, copies, sourceDir, linkRate, participants, coordinator,
                preparedTimeoutMillis, layoutDigests, rankLayouts, List.of());
    }

    /** Every description the change names: the model's, the layouts', then the addresses' (when by digest). */
    public List<String> descriptions() {
        List<String> all = new java.util.ArrayList<>(layoutDigests.size() + 2);
        all.add(modelDigest);
        all.addAll(layoutDigests);
        if (!daemonsDigest.isEmpty()) {
            all.add(daemonsDigest);
        }
        return all;
    }

    /** This change with the workers' addresses given (the digest kept: the definition is the same). */
    public ChangeSpec withDaemons(Map<Integer, String> addresses) {
        return new ChangeSpec(job, changeId, step, modelDigest, from, to, addresses, copies, sourceDir, linkRate,
                participants, coordinator, preparedTimeoutMillis, layoutDigests, rankLayouts, rebuilding, daemonsDigest);
    }
}
