package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The check before a change of T or P carries what the model does not describe as replicated values
 * ({@link UndeclaredValues}): the old ranks of one data-parallel index that saved a path must have
 * saved the same bytes (and, for a tensor, the same dtype and shape), since only one of them is kept.
 * Values may differ between data-parallel indices (RNG state: each new rank takes its own index's).
 * Type records of directories ({@code dir.meta}) are not compared: they list what each rank's
 * directory holds, which differs between stages. A difference is refused, before anything changes,
 * naming the path and the ranks; a value that should differ between tensor or pipeline ranks is
 * declared in the spec's {@code values} with a scope instead.
 */
final class CarriedValues {
    static final String TYPE_RECORD = "dir.meta";

    private CarriedValues() {
    }

    /**
     * Asks the daemon of each rank to compare for the digests of its values ({@link ValueDigests}),
     * then compares them here: no value crosses the network.
     *
     * @param holders the daemon of every old rank
     * @param deferred old ranks left out of the comparison (not readable yet: compared again later)
     * @throws IllegalArgumentException naming the path and two ranks that saved it differently
     * @throws IOException when a value could not be digested (naming the rank and the path)
     */
    static void requireEqual(Plan plan, Map<Integer, CheckpointLayout> sources, DaemonClient client, String job,
            String sourceDir, Map<Integer, InetSocketAddress> holders, java.util.Set<Integer> deferred)
            throws IOException, InterruptedException {
        if (UndeclaredValues.positionsKept(plan)) {
            return; // every position keeps its own values: nothing is merged
        }
        List<Group> groups = new ArrayList<>();
        Map<Integer, List<String>> wanted = new TreeMap<>();
        for (Map.Entry<String, Map<Integer, List<Integer>>> e : UndeclaredValues.savers(plan, sources).entrySet()) {
            String path = e.getKey();
            if (path.equals(TYPE_RECORD) || path.endsWith("/" + TYPE_RECORD)) {
                continue;
            }
            for (Map.Entry<Integer, List<Integer>> g : e.getValue().entrySet()) {
                List<Integer> ranks = g.getValue().stream().filter(r -> !deferred.contains(r)).toList();
                if (ranks.size() > 1) {
                    groups.add(new Group(path, g.getKey(), ranks));
                    ranks.forEach(r -> wanted.computeIfAbsent(r, x -> new ArrayList<>()).add(path));
                }
            }
        }
        if (groups.isEmpty()) {
            return;
        }
        Map<Integer, Map<String, String>> digests = ValueDigests.collect(client, job, sourceDir, wanted, holders);
        for (Group g : groups) {
            String first = digests.get(g.ranks().get(0)).get(g.path());
            for (int i = 1; i < g.ranks().size(); i++) {
                if (!first.equals(digests.get(g.ranks().get(i)).get(g.path()))) {
                    throw differs(g.path(), g.dataIndex(), g.ranks().get(0), g.ranks().get(i), plan);
                }
            }
        }
    }

    /** A value's path, a data-parallel index and the old ranks of it that saved the path. */
    private record Group(String path, int dataIndex, List<Integer> ranks) {
    }

    private static IllegalArgumentException differs(String path, int dataIndex, int a, int b, Plan plan) {
        return new IllegalArgumentException("value '" + CheckpointLayout.key(path) + "' (saved as " + path
                + ") differs between ranks " + a + " and " + b + " (data-parallel index " + dataIndex + ") of "
                + plan.from() + ": the model does not describe it, so the change to " + plan.to() + " carries one copy "
                + "of it and cannot tell which to keep; save it equal on every tensor and pipeline rank, or declare "
                + "it in the spec's values with a scope (per-position, per-data-rank or global)");
    }
}
