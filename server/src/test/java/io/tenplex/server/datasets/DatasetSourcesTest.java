package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import io.tenplex.datasets.DatasetExecutors;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.SourcePolicy;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.RestServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where dataset sources may come from, over real HTTP against a real REST server: local files only
 * below the data roots, URLs only on allowed hosts without redirects, errors that echo no content,
 * fetches that never block the event loops and time out, sizes checked before allocation, and
 * memory accounting back to its baseline.
 */
class DatasetSourcesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SECRET = "TOP-SECRET-token-4711";

    @TempDir
    Path tmp;
    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private TensorStore store;
    private DatasetService datasets;
    private String base;

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private void daemon(SourcePolicy policy) throws Exception {
        store = new TensorStore(new Allocator(64L << 20));
        open.add(store);
        datasets = new DatasetService(store.allocator(), policy,
                new HttpShardPeers(io.tenplex.server.peer.DaemonLink.plain(null)), DatasetExecutors.standard());
        RestServer rest = new RestServer(store, null);
        rest.addControl(DatasetRoutes.PREFIX, new DatasetRoutes(datasets));
        InetSocketAddress addr = rest.start("127.0.0.1", 0);
        open.add(rest);
        open.add(datasets);
        base = "http://127.0.0.1:" + addr.getPort();
    }

    private HttpResponse<String> mount(String job, ObjectNode body) throws Exception {
        return client.send(mountRequest(job, body), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest mountRequest(String job, ObjectNode body) throws Exception {
        return HttpRequest.newBuilder(URI.create(base + DatasetRoutes.PREFIX + job + "/mount"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static ObjectNode params() {
        return JSON.createObjectNode().put("globalBatch", 1).put("dpSize", 1).put("shuffle", false);
    }

    private static ObjectNode inline(String file, long size) {
        return params().put("indexText", "1\n" + file + " 1\n0 " + size + "\n");
    }

    private Path secretFile(String name) throws Exception {
        return Files.writeString(tmp.resolve(name), SECRET + "\n");
    }

    private void assertRefused(HttpResponse<String> r, String hint) throws Exception {
        assertEquals(403, r.statusCode(), r.body());
        assertTrue(r.body().contains(hint), r.body());
        assertFalse(r.body().contains(SECRET), r.body());
        assertEquals(404, get(DatasetRoutes.PREFIX + "j").statusCode(), "a refused mount left a mount");
        assertEquals(0, store.allocator().usedBytes());
    }

    @Test
    void byDefault_localFilesAndUrlsAreRefused_withoutEchoingContent() throws Exception {
        daemon(SourcePolicy.none());
        Path secret = secretFile("secret.txt");
        assertRefused(mount("j", inline(secret.toString(), 10)), "--data-root");
        assertRefused(mount("j", inline("/etc/passwd", 1)), "--data-root");
        assertRefused(mount("j", params().put("index", secret.toString())), "--data-root");
        HttpResponse<String> environ = mount("j", params().put("index", "/proc/self/environ"));
        assertRefused(environ, "--data-root");
        assertFalse(environ.body().contains(System.getenv().getOrDefault("PATH", "/usr/bin")), environ.body());
        assertRefused(mount("j", params().put("index", "http://127.0.0.1:1/index.txt")), "--allow-source-host");
        assertRefused(mount("j", inline("http://127.0.0.1:1/data", 1)), "--allow-source-host");
        assertRefused(mount("j", (ObjectNode) params().put("indexText", "0\n").set("peers",
                JSON.createArrayNode().add("127.0.0.1:1"))), "--allow-source-host");
    }

    @Test
    void dataRoots_allowFilesBelowThem_only_andMissingLooksLikeOutside() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("data"));
        Path inside = Files.writeString(root.resolve("lines.txt"), "a\nbb\n");
        Path outside = secretFile("outside.txt");
        Files.createSymbolicLink(root.resolve("link.txt"), outside);
        Path later = tmp.resolve("later"); // a root that does not exist yet allows nothing until it does
        daemon(SourcePolicy.none().withDataRoots(List.of(root, later)));

        assertEquals(200, mount("j", inline(inside.toString(), 5)).statusCode());
        assertEquals("a\nbb\n", get(DatasetRoutes.PREFIX + "j/files/dataset/rank-0/samples").body());
        assertEquals(200, client.send(HttpRequest.newBuilder(URI.create(base + DatasetRoutes.PREFIX + "j")).DELETE()
                .build(), HttpResponse.BodyHandlers.ofString()).statusCode());

        String[] refused = {outside.toString(), root.resolve("link.txt").toString(),
            root.resolve("../outside.txt").toString(), "file://" + outside, tmp.resolve("missing.txt").toString(),
            root.resolve("missing.txt").toString(), root.toString()};
        List<String> reasons = new ArrayList<>();
        for (String url : refused) {
            HttpResponse<String> r = mount("j", inline(url, 10));
            assertRefused(r, "is not a readable file below this daemon's data roots");
            reasons.add(r.body().replace(url, "URL"));
        }
        assertEquals(1, reasons.stream().distinct().count(), "refusals differ: " + reasons);
        HttpResponse<String> notAnIndex = mount("j", params().put("index", Files.writeString(root.resolve("secret.idx"),
                SECRET + "\n").toString()));
        assertEquals(400, notAnIndex.statusCode(), notAnIndex.body());
        assertFalse(notAnIndex.body().contains(SECRET), notAnIndex.body());
        assertTrue(notAnIndex.body().contains("is not a valid index (line 1)"), notAnIndex.body());
        assertRefused(mount("j", inline(later.resolve("x.txt").toString(), 1)), "below this daemon's data roots");
        Path x = Files.writeString(Files.createDirectories(later).resolve("x.txt"), "x");
        assertEquals(200, mount("j", inline(x.toString(), 1)).statusCode());
    }

    @Test
    void urlSources_onlyOnAllowedHosts_andRedirectsAreNotFollowed() throws Exception {
        AtomicInteger followed = new AtomicInteger();
        HttpServer src = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        src.createContext("/moved", ex -> {
            ex.getResponseHeaders().add("Location", "/index.txt");
            ex.sendResponseHeaders(302, -1);
            ex.close();
        });
        src.createContext("/index.txt", ex -> {
            followed.incrementAndGet();
            byte[] b = ("1\n" + SECRET + " 1\n0 1\n").getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        src.start();
        open.add(() -> src.stop(0));
        String at = "http://127.0.0.1:" + src.getAddress().getPort();
        daemon(SourcePolicy.none().withAllowedHosts(List.of("127.0.0.1:" + src.getAddress().getPort())));

        HttpResponse<String> moved = mount("j", params().put("index", at + "/moved"));
        assertEquals(502, moved.statusCode(), moved.body());
        assertTrue(moved.body().contains("redirects are not followed"), moved.body());
        assertEquals(0, followed.get(), "the redirect was followed");
        assertRefused(mount("j", params().put("index", "http://localhost:" + src.getAddress().getPort() + "/index.txt")),
                "--allow-source-host");
        HttpResponse<String> samples = mount("j", params().put("index", at + "/index.txt"));
        assertEquals(403, samples.statusCode(), samples.body()); // its sample file is a local path: no data roots
        assertFalse(samples.body().contains("0 1"), samples.body());
    }

    /** A TCP server that accepts connections and never answers; counts what it accepted. */
    private static final class Silent implements AutoCloseable {
        final ServerSocket server;
        final List<Socket> accepted = new ArrayList<>();
        final CountDownLatch first = new CountDownLatch(1);

        Silent() throws Exception {
            server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        Socket s = server.accept();
                        synchronized (accepted) {
                            accepted.add(s);
                        }
                        first.countDown();
                    }
                } catch (java.io.IOException closed) {
                    // closed by the test
                }
            }, "silent-source");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws Exception {
            server.close();
            synchronized (accepted) {
                for (Socket s : accepted) {
                    s.close();
                }
            }
        }
    }

    @Test
    void anIndexUrlThatNeverAnswers_blocksNoEventLoop_andTimesOutWith504() throws Exception {
        Silent silent = new Silent();
        open.add(silent);
        daemon(SourcePolicy.none().withAllowedHosts(List.of("127.0.0.1"))
                .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2)));
        int n = Math.min(2 * Runtime.getRuntime().availableProcessors() + 2, 60); // more than Netty's event loops
        List<CompletableFuture<HttpResponse<String>>> mounts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            mounts.add(client.sendAsync(mountRequest("j" + i, params().put("index", "http://127.0.0.1:"
                    + silent.server.getLocalPort() + "/index.txt")), HttpResponse.BodyHandlers.ofString()));
        }
        assertTrue(silent.first.await(30, TimeUnit.SECONDS), "no fetch reached the silent source");
        long t0 = System.nanoTime();
        for (int i = 0; i < 20; i++) {
            HttpResponse<String> health = client.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/health"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "health answered slowly");
        for (CompletableFuture<HttpResponse<String>> f : mounts) {
            HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
            assertEquals(504, r.statusCode(), r.body());
            assertTrue(r.body().contains("no complete answer in time"), r.body());
        }
        assertEquals(0, store.allocator().usedBytes());
    }

    @Test
    void hugeSizes_are400sCarryingTheValueAndLimit_beforeAnythingIsAllocated() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("data"));
        Path lines = Files.writeString(root.resolve("lines.txt"), "a\nb\nc\nd\n");
        daemon(SourcePolicy.none().withDataRoots(List.of(root)));
        String index = "1\n" + lines + " 4\n0 2\n2 4\n4 6\n6 8\n";
        ObjectNode ok = JSON.createObjectNode().put("indexText", index).put("globalBatch", 2).put("dpSize", 2);
        HttpResponse<String> dp = mount("j", ok.deepCopy().put("dpSize", Integer.MAX_VALUE));
        assertEquals(400, dp.statusCode(), dp.body());
        assertTrue(dp.body().contains("2147483647") && dp.body().contains("65536"), dp.body());
        HttpResponse<String> g = mount("j", ok.deepCopy().put("globalBatch", Integer.MAX_VALUE));
        assertEquals(400, g.statusCode(), g.body());
        assertTrue(g.body().contains("2147483647") && g.body().contains("4 samples"), g.body());
        HttpResponse<String> both = mount("j", ok.deepCopy().put("globalBatch", Integer.MAX_VALUE)
                .put("dpSize", Integer.MAX_VALUE));
        assertEquals(400, both.statusCode(), both.body());
        HttpResponse<String> count = mount("j", ok.deepCopy().put("indexText", "1\n" + lines + " 2147483647\n0 1\n"));
        assertEquals(400, count.statusCode(), count.body());
        HttpResponse<String> far = mount("j", ok.deepCopy().put("progress", Long.MAX_VALUE - 1));
        assertEquals(400, far.statusCode(), far.body());
        HttpResponse<String> over = mount("j", ok.deepCopy().put("dpSize", 1e12));
        assertEquals(400, over.statusCode(), over.body());
        assertEquals(404, get(DatasetRoutes.PREFIX + "j").statusCode());
        assertEquals(0, store.allocator().usedBytes());
    }

    @Test
    void duplicateRanks_areRefused_andMountsLeaveNoBytesBehind() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("data"));
        Path lines = Files.writeString(root.resolve("lines.txt"), "a\nb\nc\nd\n");
        daemon(SourcePolicy.none().withDataRoots(List.of(root)));
        String index = "1\n" + lines + " 4\n0 2\n2 4\n4 6\n6 8\n";
        ObjectNode m = JSON.createObjectNode().put("indexText", index).put("globalBatch", 2).put("dpSize", 2);
        long baseline = store.allocator().usedBytes();
        HttpResponse<String> dup = mount("j", (ObjectNode) m.deepCopy().set("ranks", JSON.createArrayNode().add(0).add(0)));
        assertEquals(400, dup.statusCode(), dup.body());
        assertTrue(dup.body().contains("rank 0 appears more than once"), dup.body());
        assertEquals(baseline, store.allocator().usedBytes());
        for (int i = 0; i < 3; i++) {
            assertEquals(200, mount("j", (ObjectNode) m.deepCopy().set("ranks", JSON.createArrayNode().add(1).add(0)))
                    .statusCode());
            assertTrue(datasets.awaitLoaded("j", Duration.ofSeconds(30)));
            assertTrue(store.allocator().usedBytes() > baseline);
            datasets.unmount("j");
            assertEquals(baseline, store.allocator().usedBytes(), "mount " + i + " left bytes behind");
        }
    }
}
