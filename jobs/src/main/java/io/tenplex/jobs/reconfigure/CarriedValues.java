package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.StorePath;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;

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
     * @param holders the daemon of every old rank
     * @param deferred old ranks left out of the comparison (not readable yet: compared again later)
     * @throws IllegalArgumentException naming the path and two ranks that saved it differently
     * @throws IOException when a value could not be read (naming the rank and the path)
     */
    static void requireEqual(Plan plan, Map<Integer, CheckpointLayout> sources, DaemonClient client, JobLayout paths,
            Map<Integer, InetSocketAddress> holders, java.util.Set<Integer> deferred)
            throws IOException, InterruptedException {
        if (UndeclaredValues.positionsKept(plan)) {
            return; // every position keeps its own values: nothing is merged
        }
        for (Map.Entry<String, Map<Integer, List<Integer>>> e : UndeclaredValues.savers(plan, sources).entrySet()) {
            String path = e.getKey();
            if (path.equals(TYPE_RECORD) || path.endsWith("/" + TYPE_RECORD)) {
                continue;
            }
            for (Map.Entry<Integer, List<Integer>> g : e.getValue().entrySet()) {
                List<Integer> ranks = g.getValue().stream().filter(r -> !deferred.contains(r)).toList();
                if (ranks.size() > 1) {
                    compare(path, g.getKey(), ranks, client, paths, holders, plan);
                }
            }
        }
    }

    private static void compare(String path, int dataIndex, List<Integer> ranks, DaemonClient client, JobLayout paths,
            Map<Integer, InetSocketAddress> holders, Plan plan) throws IOException, InterruptedException {
        DaemonClient.SavedValue first = read(client, paths, holders, ranks.get(0), path);
        for (int i = 1; i < ranks.size(); i++) { // one copy at a time beside the first: memory stays at two values
            DaemonClient.SavedValue other = read(client, paths, holders, ranks.get(i), path);
            if (!Objects.equals(first.tensor(), other.tensor()) || !Arrays.equals(first.bytes(), other.bytes())) {
                throw new IllegalArgumentException("value '" + CheckpointLayout.key(path) + "' (saved as " + path
                        + ") differs between ranks " + ranks.get(0) + " and "
                        + ranks.get(i) + " (data-parallel index " + dataIndex + ") of " + plan.from()
                        + ": the model does not describe it, so the change to " + plan.to() + " carries one copy of it "
                        + "and cannot tell which to keep; save it equal on every tensor and pipeline rank, or declare "
                        + "it in the spec's values with a scope (per-position, per-data-rank or global)");
            }
        }
    }

    private static DaemonClient.SavedValue read(DaemonClient client, JobLayout paths,
            Map<Integer, InetSocketAddress> holders, int rank, String path) throws IOException, InterruptedException {
        try {
            return client.readValue(holders.get(rank), paths.savedRank(rank).resolve(StorePath.parse(path))).get();
        } catch (ExecutionException e) {
            throw new IOException("reading rank " + rank + "'s '" + path + "' to compare it: "
                    + e.getCause().getMessage(), e.getCause());
        }
    }
}
