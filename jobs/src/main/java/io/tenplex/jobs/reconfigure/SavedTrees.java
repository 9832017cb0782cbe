package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The saved trees of a job's ranks, listed on their daemons (a bounded number at a time) and read as
 * {@link CheckpointLayout}s. Ranks that saved the same tree (every tensor- and data-parallel rank of a
 * stage, as a rule) share one layout: at 4096 ranks a layout per rank would hold millions of entries.
 */
final class SavedTrees {
    /** Listings asked at once: their answers are held until read, in rank order. */
    static final int IN_FLIGHT = 64;

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
        Map<List<CheckpointLayout.Item>, CheckpointLayout> distinct = new HashMap<>();
        Map<Integer, CheckpointLayout> out = new TreeMap<>();
        ArrayDeque<Integer> asked = new ArrayDeque<>();
        ArrayDeque<CompletableFuture<List<DaemonClient.TreeEntry>>> answers = new ArrayDeque<>();
        for (Map.Entry<Integer, InetSocketAddress> h : new TreeMap<>(holders).entrySet()) {
            if (answers.size() == IN_FLIGHT) {
                read(asked.poll(), answers.poll(), paths, distinct, out);
            }
            asked.add(h.getKey());
            answers.add(client.listTree(h.getValue(), paths.savedRank(h.getKey())));
        }
        while (!answers.isEmpty()) {
            read(asked.poll(), answers.poll(), paths, distinct, out);
        }
        return out;
    }

    private static void read(int rank, CompletableFuture<List<DaemonClient.TreeEntry>> answer, JobLayout paths,
            Map<List<CheckpointLayout.Item>, CheckpointLayout> distinct, Map<Integer, CheckpointLayout> out)
            throws IOException, InterruptedException {
        List<DaemonClient.TreeEntry> entries;
        try {
            entries = answer.get();
        } catch (ExecutionException x) {
            throw new IOException("listing rank " + rank + "'s saved state: " + x.getCause().getMessage(), x);
        }
        String root = paths.savedRank(rank) + "/";
        List<CheckpointLayout.Item> items = new ArrayList<>();
        for (DaemonClient.TreeEntry n : entries) {
            if (n.path().startsWith(root)) {
                items.add(new CheckpointLayout.Item(n.path().substring(root.length()), n.tensor(), n.dims(), n.meta()));
            }
        }
        if (!items.isEmpty()) {
            CheckpointLayout known = distinct.get(items);
            if (known == null) {
                known = CheckpointLayout.of(items);
                distinct.put(List.copyOf(items), known);
            }
            out.put(rank, known);
        }
    }
}
