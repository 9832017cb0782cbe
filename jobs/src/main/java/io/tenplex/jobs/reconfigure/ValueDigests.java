package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.DataRef;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * Saved values compared where they are ({@link CarriedValues}): each daemon digests the values of
 * its own old ranks that a change must compare (SHA-256 over the value's kind, a tensor's dtype and
 * shape, and its bytes) and answers the digests; the coordinator compares digests, never reading a
 * value. One request per daemon, at most {@link LocalTrees#IN_FLIGHT} at once.
 */
public final class ValueDigests {
    /** Paths one request may name, over all its ranks. */
    public static final int MAX_PATHS = 1 << 16;
    /** The characters of the paths one request may name, over all its ranks (its body stays a few MiB). */
    public static final int MAX_PATH_CHARS = 2 << 20;
    /** The bytes one request may have digested: values a change merges are small (RNG states, counters). */
    public static final long MAX_BYTES = 1L << 30;
    private static final int CHUNK = 1 << 20;

    private ValueDigests() {
    }

    /**
     * This daemon's side: the digest of each named value of each rank under {@code paths} (a path
     * named twice is digested once).
     *
     * @param values rank -> paths relative to the rank's saved tree
     * @throws StoreException not found, naming the rank and the path, when one is missing; too large
     *     when the values would be more than {@link #MAX_BYTES} (nothing is digested then)
     */
    public static Map<Integer, Map<String, String>> digest(TensorStore store, JobLayout paths,
            Map<Integer, List<String>> values) {
        Map<Integer, Map<String, String>> out = new TreeMap<>();
        long bytes = 0;
        for (var e : values.entrySet()) { // sizes first: a request for too much is refused before any work
            for (String p : new java.util.LinkedHashSet<>(e.getValue())) {
                try (DataRef ref = open(store, paths, e.getKey(), p)) {
                    bytes += ref.size();
                }
                if (bytes > MAX_BYTES) {
                    throw new StoreException(StoreException.Kind.TOO_LARGE, "the values named are more than "
                            + MAX_BYTES + " bytes; ask for fewer at a time");
                }
            }
        }
        ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
        values.forEach((rank, ps) -> {
            Map<String, String> digests = new TreeMap<>();
            for (String p : new java.util.LinkedHashSet<>(ps)) {
                try (DataRef ref = open(store, paths, rank, p)) {
                    digests.put(p, digest(ref, chunk));
                }
            }
            out.put(rank, digests);
        });
        return out;
    }

    private static DataRef open(TensorStore store, JobLayout paths, int rank, String p) {
        try {
            return store.open(paths.savedRank(rank).resolve(StorePath.parse(p)));
        } catch (StoreException e) {
            throw new StoreException(e.kind(), e.detail(), "rank " + rank + "'s '" + p + "': " + e.getMessage());
        }
    }

    private static String digest(DataRef ref, ByteBuffer chunk) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e); // every JVM has SHA-256
        }
        String kind = ref.type() == EntryType.TENSOR ? "tensor " + ref.meta().dtype().name() + " "
                + ref.meta().shape() : "file";
        md.update((kind + "\n").getBytes(StandardCharsets.UTF_8));
        for (long off = 0; off < ref.size(); off += CHUNK) {
            chunk.clear();
            long n = Math.min(CHUNK, ref.size() - off);
            ref.copyTo(off, n, chunk);
            chunk.flip();
            md.update(chunk);
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /**
     * The coordinator's side: asks the daemon of each rank for the digests of its named values.
     *
     * @param wanted rank -> paths; @param holders the daemon of every old rank
     * @return rank -> (path -> digest)
     * @throws IOException naming the daemon that could not answer, or a rank it left out
     */
    static Map<Integer, Map<String, String>> collect(DaemonClient client, String job, String sourceDir,
            Map<Integer, List<String>> wanted, Map<Integer, InetSocketAddress> holders)
            throws IOException, InterruptedException {
        Map<InetSocketAddress, Map<Integer, List<String>>> byDaemon = new LinkedHashMap<>();
        wanted.forEach((rank, ps) -> byDaemon.computeIfAbsent(holders.get(rank), d -> new TreeMap<>()).put(rank, ps));
        Map<Integer, Map<String, String>> out = new HashMap<>();
        ArrayDeque<Map.Entry<InetSocketAddress, CompletableFuture<Map<Integer, Map<String, String>>>>> window =
                new ArrayDeque<>();
        for (var e : byDaemon.entrySet()) {
            for (Map<Integer, List<String>> request : split(e.getValue())) {
                if (window.size() == LocalTrees.IN_FLIGHT) {
                    take(window.poll(), out);
                }
                window.add(Map.entry(e.getKey(), client.digestValues(e.getKey(), job, sourceDir, request)
                        .thenApply(got -> asked(request, got))));
            }
        }
        while (!window.isEmpty()) {
            take(window.poll(), out);
        }
        for (var e : wanted.entrySet()) {
            Map<String, String> got = out.getOrDefault(e.getKey(), Map.of());
            for (String p : e.getValue()) {
                if (got.get(p) == null) {
                    throw new IOException("the daemon at " + holders.get(e.getKey()) + " answered no digest of rank "
                            + e.getKey() + "'s '" + p + "'");
                }
            }
        }
        return out;
    }

    /**
     * Only the digests asked of a daemon, each 64 hex digits: a daemon answering for a rank it was not
     * asked about, or with anything but a digest, is refused (never compared).
     */
    private static Map<Integer, Map<String, String>> asked(Map<Integer, List<String>> request,
            Map<Integer, Map<String, String>> got) {
        Map<Integer, Map<String, String>> out = new TreeMap<>();
        request.forEach((rank, ps) -> {
            Map<String, String> ds = got.getOrDefault(rank, Map.of());
            for (String p : ps) {
                String d = ds.get(p);
                if (d != null && !d.matches("[0-9a-f]{64}")) {
                    throw new java.util.concurrent.CompletionException(new IOException("answered '"
                            + d.substring(0, Math.min(d.length(), 70)) + "' for rank " + rank + "'s '" + p
                            + "': not a SHA-256 digest"));
                }
                if (d != null) {
                    out.computeIfAbsent(rank, r -> new HashMap<>()).put(p, d);
                }
            }
        });
        return out;
    }

    /**
     * A daemon's ranks' paths in requests of at most {@link #MAX_PATHS} paths and
     * {@link #MAX_PATH_CHARS} characters of paths (a rank's list may be split).
     */
    private static List<Map<Integer, List<String>>> split(Map<Integer, List<String>> all) {
        List<Map<Integer, List<String>>> out = new ArrayList<>();
        Map<Integer, List<String>> cur = new TreeMap<>();
        int n = 0;
        long chars = 0;
        for (var e : all.entrySet()) {
            for (String p : e.getValue()) {
                if (n == MAX_PATHS || n > 0 && chars + p.length() > MAX_PATH_CHARS) {
                    out.add(cur);
                    cur = new TreeMap<>();
                    n = 0;
                    chars = 0;
                }
                cur.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(p);
                n++;
                chars += p.length();
            }
        }
        if (!cur.isEmpty()) {
            out.add(cur);
        }
        return out;
    }

    private static void take(Map.Entry<InetSocketAddress, CompletableFuture<Map<Integer, Map<String, String>>>> asked,
            Map<Integer, Map<String, String>> out) throws IOException, InterruptedException {
        try {
            asked.getValue().get().forEach((rank, ds) -> out.computeIfAbsent(rank, r -> new HashMap<>()).putAll(ds));
        } catch (ExecutionException x) {
            throw new IOException("digesting saved values on the daemon at " + asked.getKey() + ": "
                    + x.getCause().getMessage(), x.getCause());
        }
    }
}
