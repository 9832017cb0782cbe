package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
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
 * The old ranks' saved trees checked where they are: each daemon reads its own ranks' trees as
 * layouts (a tree that cannot be read as one, e.g. two paths of one key, is refused there, naming the
 * rank) and answers a digest per rank, keeping each distinct layout's description; the coordinator
 * fetches one description per distinct digest. A change then costs the coordinator an answer per
 * daemon and a description per distinct tree, not a listing per rank.
 */
public final class LocalTrees {
    /** Daemons asked at once. */
    static final int IN_FLIGHT = 64;

    private LocalTrees() {
    }

    /**
     * This daemon's side: the layout digest of each of {@code ranks}' saved trees under {@code paths}
     * (null for a rank that saved nothing here), each distinct description kept in {@code kept}.
     *
     * @throws IllegalArgumentException naming the rank whose tree is not a layout
     */
    public static Map<Integer, String> describe(TensorStore store, JobLayout paths, List<Integer> ranks, Descriptions kept) {
        Map<List<CheckpointLayout.Item>, String> distinct = new HashMap<>();
        Map<Integer, String> out = new TreeMap<>();
        for (int rank : ranks) {
            List<CheckpointLayout.Item> items = items(store, paths, rank);
            if (items.isEmpty()) {
                out.put(rank, null);
                continue;
            }
            String d = distinct.get(items);
            if (d == null) {
                CheckpointLayout l;
                try {
                    l = CheckpointLayout.of(items);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("rank " + rank + "'s saved tree: " + e.getMessage(), e);
                }
                byte[] b = Descriptions.layout(l);
                d = Descriptions.digest(b);
                kept.put(d, b);
                distinct.put(List.copyOf(items), d);
            }
            out.put(rank, d);
        }
        return out;
    }

    /** A rank's saved tree as a listing over the REST API reads it ({@code SavedTrees}). */
    private static List<CheckpointLayout.Item> items(TensorStore store, JobLayout paths, int rank) {
        String root = paths.savedRank(rank) + "/";
        List<Entry> entries;
        try {
            entries = store.walk(paths.savedRank(rank), false);
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.NOT_FOUND) {
                return List.of();
            }
            throw e;
        }
        List<CheckpointLayout.Item> items = new ArrayList<>();
        for (Entry e : entries) {
            String p = e.path().toString();
            if (p.startsWith(root)) {
                boolean tensor = e.type() == EntryType.TENSOR;
                int dims = e.meta() == null ? 0 : e.meta().shape().dims().length;
                items.add(new CheckpointLayout.Item(p.substring(root.length()), tensor, dims, tensor ? e.meta() : null));
            }
        }
        return items;
    }

    /**
     * The coordinator's side: asks each daemon for its own ranks' layout digests (at most
     * {@link #IN_FLIGHT} at once), then one description per distinct digest from a daemon that has it.
     *
     * @param holders the daemon of every old rank
     * @return each rank's layout (ranks of one tree share one), a rank that saved nothing left out
     * @throws IOException naming the daemon that could not answer or the digest whose description did not match
     */
    static Map<Integer, CheckpointLayout> collect(DaemonClient client, String job, String sourceDir,
            Map<Integer, InetSocketAddress> holders) throws IOException, InterruptedException {
        Map<InetSocketAddress, List<Integer>> byDaemon = new java.util.LinkedHashMap<>();
        holders.forEach((rank, d) -> byDaemon.computeIfAbsent(d, x -> new ArrayList<>()).add(rank));
        Map<Integer, String> digests = new TreeMap<>();
        Map<String, InetSocketAddress> at = new HashMap<>();
        ArrayDeque<Map.Entry<InetSocketAddress, CompletableFuture<Map<Integer, String>>>> window = new ArrayDeque<>();
        for (var e : byDaemon.entrySet()) {
            if (window.size() == IN_FLIGHT) {
                take(window.poll(), digests, at);
            }
            window.add(Map.entry(e.getKey(), client.describeTrees(e.getKey(), job, sourceDir, e.getValue())));
        }
        while (!window.isEmpty()) {
            take(window.poll(), digests, at);
        }
        Map<String, CheckpointLayout> layouts = new HashMap<>();
        for (var e : at.entrySet()) {
            byte[] b = get(client.description(e.getValue(), job, e.getKey()), e.getValue());
            if (!Descriptions.digest(b).equals(e.getKey())) {
                throw new IOException("the daemon at " + e.getValue() + " answered a layout that does not have digest "
                        + e.getKey());
            }
            layouts.put(e.getKey(), Descriptions.layout(b));
        }
        Map<Integer, CheckpointLayout> out = new TreeMap<>();
        digests.forEach((rank, d) -> out.put(rank, layouts.get(d)));
        return out;
    }

    private static void take(Map.Entry<InetSocketAddress, CompletableFuture<Map<Integer, String>>> asked,
            Map<Integer, String> digests, Map<String, InetSocketAddress> at) throws IOException, InterruptedException {
        get(asked.getValue(), asked.getKey()).forEach((rank, d) -> {
            if (d != null) {
                digests.put(rank, d);
                at.putIfAbsent(d, asked.getKey());
            }
        });
    }

    private static <T> T get(CompletableFuture<T> f, InetSocketAddress daemon) throws IOException, InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException x) {
            throw new IOException("checking the saved trees on the daemon at " + daemon + ": " + x.getCause().getMessage(),
                    x.getCause());
        }
    }
}
