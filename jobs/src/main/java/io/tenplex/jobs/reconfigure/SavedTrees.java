package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/** The saved trees of a job's ranks, listed on their daemons all at once and read as {@link CheckpointLayout}s. */
final class SavedTrees {
    private SavedTrees() {
    }

    /**
     * Lists the saved tree of every rank in {@code holders} (rank to its daemon) below {@code paths};
     * a rank that saved nothing is left out of the answer.
     *
     * @throws IOException naming the rank whose daemon could not list it
     */
    static Map<Integer, CheckpointLayout> list(DaemonClient client, JobLayout paths, Map<Integer, InetSocketAddress> holders)
            throws IOException, InterruptedException {
        Map<Integer, CompletableFuture<List<DaemonClient.TreeEntry>>> asks = new TreeMap<>();
        holders.forEach((rank, daemon) -> asks.put(rank, client.listTree(daemon, paths.savedRank(rank))));
        Map<Integer, CheckpointLayout> out = new TreeMap<>();
        for (Map.Entry<Integer, CompletableFuture<List<DaemonClient.TreeEntry>>> e : asks.entrySet()) {
            int rank = e.getKey();
            List<DaemonClient.TreeEntry> entries;
            try {
                entries = e.getValue().get();
            } catch (ExecutionException x) {
                throw new IOException("listing rank " + rank + "'s saved state: " + x.getCause().getMessage(), x);
            }
            String root = paths.savedRank(rank) + "/";
            List<CheckpointLayout.Item> items = new ArrayList<>();
            for (DaemonClient.TreeEntry n : entries) {
                if (n.path().startsWith(root)) {
                    items.add(new CheckpointLayout.Item(n.path().substring(root.length()), n.tensor(), n.dims(),
                            n.meta()));
                }
            }
            if (!items.isEmpty()) {
                out.put(rank, CheckpointLayout.of(items));
            }
        }
        return out;
    }
}
