package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The digests a daemon answers for its saved values, and the coordinator's requests for them. */
class ValueDigestsTest {
    private static final JobLayout PATHS = new JobLayout("j", "gen/30", "load");
    private final TensorStore store = new TensorStore(new Allocator(64L << 20));

    @AfterEach
    void close() {
        store.close();
    }

    private Map<String, String> digests(int rank, String... paths) {
        return ValueDigests.digest(store, PATHS, Map.of(rank, List.of(paths))).get(rank);
    }

    /** A value over several 1 MiB chunks, of an odd size: the digest is SHA-256 over its kind and every byte. */
    @Test
    void aLargeOddSizedValue_isDigestedWhole() throws Exception {
        byte[] big = new byte[3 * (1 << 20) + 12345];
        new Random(7).nextBytes(big);
        Fixtures.putFile(store, "/job/j/gen/30/0/rng/state", big, false);
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update("file\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        assertEquals(HexFormat.of().formatHex(md.digest(big)), digests(0, "rng/state").get("rng/state"));
        big[big.length - 1] ^= 1;
        Fixtures.putFile(store, "/job/j/gen/30/1/rng/state", big, false);
        assertNotEquals(digests(0, "rng/state"), digests(1, "rng/state"), "the last byte differs");
    }

    /** Equal bytes saved as a file, or as tensors of another dtype or shape, are different values. */
    @Test
    void theSameBytes_asAnotherKindDtypeOrShape_differ() {
        byte[] b = Fixtures.iota32(6);
        Fixtures.putTensor(store, "/job/j/gen/30/0/v", TensorMeta.of(DType.F32, 2, 3), b, false);
        Fixtures.putTensor(store, "/job/j/gen/30/1/v", TensorMeta.of(DType.F32, 2, 3), b, false);
        Fixtures.putTensor(store, "/job/j/gen/30/2/v", TensorMeta.of(DType.F32, 3, 2), b, false);
        Fixtures.putTensor(store, "/job/j/gen/30/3/v", TensorMeta.of(DType.I32, 2, 3), b, false);
        Fixtures.putFile(store, "/job/j/gen/30/4/v", b, false);
        List<String> got = new ArrayList<>();
        for (int r = 0; r < 5; r++) {
            got.add(digests(r, "v").get("v"));
        }
        assertEquals(got.get(0), got.get(1));
        assertEquals(4, got.subList(1, 5).stream().distinct().count(), got.toString());
    }

    /** A path named twice is digested once; a directory is refused with its precise kind, naming it. */
    @Test
    void aPathNamedTwice_onceADirectory_refused() {
        Fixtures.putFile(store, "/job/j/gen/30/0/a", new byte[] {1}, false);
        Fixtures.putFile(store, "/job/j/gen/30/0/d/x", new byte[] {2}, false);
        assertEquals(1, digests(0, "a", "a").size());
        StoreException e = assertThrows(StoreException.class, () -> digests(0, "a", "d"));
        assertEquals(StoreException.Kind.IS_A_DIRECTORY, e.detail());
        assertTrue(e.getMessage().contains("rank 0's 'd'"), e.getMessage());
    }

    @Test
    void aMissingValue_isNotFound_namingTheRankAndPath() {
        Fixtures.putFile(store, "/job/j/gen/30/0/a", new byte[] {1}, false);
        StoreException e = assertThrows(StoreException.class, () -> digests(0, "a", "b/c"));
        assertEquals(StoreException.Kind.NOT_FOUND, e.kind());
        assertTrue(e.getMessage().contains("rank 0's 'b/c'"), e.getMessage());
    }

    /**
     * The coordinator asks each daemon once for its ranks' values (at most {@code MAX_PATHS} paths a
     * request), and refuses an answer that leaves one out.
     */
    @Test
    void collect_asksEachDaemonForItsRanks_inBoundedRequests_andRefusesAGap() throws Exception {
        InetSocketAddress a = InetSocketAddress.createUnresolved("a", 1);
        InetSocketAddress b = InetSocketAddress.createUnresolved("b", 1);
        Map<Integer, List<String>> wanted = new TreeMap<>();
        List<String> many = new ArrayList<>();
        for (int i = 0; i < ValueDigests.MAX_PATHS + 5; i++) {
            many.add("v" + i);
        }
        wanted.put(0, many);
        wanted.put(1, List.of("x"));
        wanted.put(2, List.of("x", "y"));
        List<String> asked = java.util.Collections.synchronizedList(new ArrayList<>());
        // a daemon that answers each asked path's digest as "rank:path", except rank 2's "y" on daemon b
        // (an edge: only digestValues is called by ValueDigests)
        DaemonClient echo = (DaemonClient) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DaemonClient.class}, (proxy, m, args) -> {
                    if (!m.getName().equals("digestValues")) {
                        throw new UnsupportedOperationException(m.getName());
                    }
                    InetSocketAddress daemon = (InetSocketAddress) args[0];
                    @SuppressWarnings("unchecked")
                    Map<Integer, List<String>> values = (Map<Integer, List<String>>) args[3];
                    int n = values.values().stream().mapToInt(List::size).sum();
                    assertTrue(n <= ValueDigests.MAX_PATHS, n + " paths in one request");
                    asked.add(daemon.getHostString() + values.keySet());
                    Map<Integer, Map<String, String>> out = new TreeMap<>();
                    values.forEach((rank, ps) -> ps.forEach(p -> {
                        if (!(rank == 2 && p.equals("y") && daemon == b)) {
                            out.computeIfAbsent(rank, r -> new TreeMap<>()).put(p, hex(rank + ":" + p));
                        }
                    }));
                    if (daemon == b) { // also a rank it was not asked about (daemon a's): not taken
                        out.put(0, new TreeMap<>(Map.of("v0", hex("forged"))));
                    }
                    if (values.containsKey(3)) {
                        out.put(3, Map.of("z", "null"));
                    }
                    return CompletableFuture.completedFuture(out);
                });
        Map<Integer, InetSocketAddress> holders = Map.of(0, a, 1, a, 2, a);
        Map<Integer, Map<String, String>> got = ValueDigests.collect(echo, "j", "gen/30", wanted, holders);
        assertEquals(hex("0:v" + ValueDigests.MAX_PATHS), got.get(0).get("v" + ValueDigests.MAX_PATHS));
        assertEquals(hex("2:y"), got.get(2).get("y"));
        assertEquals(2, asked.size(), asked.toString()); // 65541 + 3 paths of one daemon: two requests
        Map<Integer, InetSocketAddress> split = Map.of(0, a, 2, b);
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> ValueDigests.collect(echo, "j", "gen/30",
                Map.of(0, List.of("v0"), 2, List.of("x", "y")), split));
        assertTrue(e.getMessage().contains("no digest of rank 2's 'y'"), e.getMessage());
        assertEquals(hex("0:v0"), ValueDigests.collect(echo, "j", "gen/30", Map.of(0, List.of("v0"), 2, List.of("x")),
                split).get(0).get("v0"), "daemon b's answer for rank 0, not asked of it, is not taken");
        e = assertThrows(java.io.IOException.class, () -> ValueDigests.collect(echo, "j", "gen/30",
                Map.of(3, List.of("z")), Map.of(3, a)));
        assertTrue(e.getMessage().contains("'null' for rank 3's 'z': not a SHA-256 digest"), e.getMessage());
    }

    private static String hex(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(
                    java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
