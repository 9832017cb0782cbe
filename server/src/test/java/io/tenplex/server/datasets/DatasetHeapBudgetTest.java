package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.datasets.DatasetExecutors;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.SourcePolicy;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.RestServer;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The heap the dataset mounts hold is accounted against a budget, over real HTTP against a real REST
 * server: once it is used, large mounts are refused with 507 (one that can never fit with 413),
 * never a 500 or an exhausted heap; the daemon keeps answering, earlier mounts keep working, and
 * the accounting returns to zero after unmounting.
 */
class DatasetHeapBudgetTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int SAMPLES = 100_000;
    private static final long BUDGET = 24L << 20;

    @TempDir
    Path tmp;
    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private DatasetService datasets;
    private String base;
    private byte[] data;
    private String index;

    @BeforeEach
    void start() throws Exception {
        data = new byte[SAMPLES];
        for (int i = 0; i < SAMPLES; i++) {
            data[i] = (byte) (i * 31);
        }
        Path file = Files.write(tmp.resolve("data.bin"), data);
        StringBuilder b = new StringBuilder("1\n" + file.toAbsolutePath() + " " + SAMPLES + "\n");
        for (int i = 0; i < SAMPLES; i++) {
            b.append(i).append(' ').append(i + 1).append('\n');
        }
        index = b.toString();
        TensorStore store = new TensorStore(new Allocator(64L << 20));
        open.add(store);
        datasets = new DatasetService(store.allocator(),
                SourcePolicy.none().withDataRoots(List.of(tmp)).withAllowedHosts(List.of("127.0.0.1")),
                new HttpShardPeers(io.tenplex.server.peer.DaemonLink.plain(null)), DatasetExecutors.standard(), BUDGET);
        RestServer rest = new RestServer(store, null);
        rest.addControl(DatasetRoutes.PREFIX, new DatasetRoutes(datasets));
        InetSocketAddress addr = rest.start("127.0.0.1", 0);
        open.add(rest);
        open.add(datasets);
        base = "http://127.0.0.1:" + addr.getPort() + DatasetRoutes.PREFIX;
    }

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private HttpResponse<String> mount(String job, int ranks, int dpSize) throws Exception {
        var body = JSON.createObjectNode().put("indexText", index).put("globalBatch", dpSize).put("dpSize", dpSize)
                .put("shuffle", false);
        var list = body.putArray("ranks");
        for (int r = 0; r < ranks; r++) {
            list.add(r);
        }
        return client.send(HttpRequest.newBuilder(URI.create(base + job + "/mount")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<byte[]> send(String method, String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void largeMounts_overTheHeapBudget_are507_andTheDaemonKeepsServing() throws Exception {
        List<String> mounted = new ArrayList<>();
        int refused = 0;
        for (int i = 0; i < 12; i++) {
            HttpResponse<String> r = mount("big" + i, 1, 1);
            if (r.statusCode() == 200) {
                assertEquals(0, refused, "a mount succeeded after one was refused: " + r.body());
                mounted.add("big" + i);
                continue;
            }
            assertEquals(507, r.statusCode(), r.body());
            assertTrue(r.body().contains("heap") && r.body().contains("TENPLEXD_JAVA_OPTS"), r.body());
            refused++;
            assertEquals(404, send("GET", "big" + i).statusCode(), "a refused mount left a mount");
        }
        assertTrue(!mounted.isEmpty() && refused >= 6, mounted + " mounted, " + refused + " refused");
        assertTrue(datasets.heapReserved() <= BUDGET, datasets.heapReserved() + " reserved");
        for (String job : mounted) { // earlier mounts still serve their samples
            assertEquals(200, send("GET", job + "?wait=60000").statusCode());
            HttpResponse<byte[]> samples = send("GET", job + "/files/dataset/rank-0/samples");
            assertEquals(200, samples.statusCode());
            assertArrayEquals(data, samples.body());
        }
        for (String job : mounted) {
            assertEquals(200, send("DELETE", job).statusCode());
        }
        assertEquals(0, datasets.heapReserved(), "heap accounting after unmounting everything");
        assertEquals(200, mount("again", 1, 1).statusCode(), "a large mount after unmounting everything");
        assertEquals(200, send("DELETE", "again").statusCode());
        assertEquals(0, datasets.heapReserved());
    }

    @Test
    void aMountOverTheWholeBudget_is413_andFewerRanksFit() throws Exception {
        String files = index.substring(2);
        index = "3\n" + files + files + files; // the file three times: more than the budget on one daemon
        HttpResponse<String> all = mount("j", 4, 4);
        assertEquals(413, all.statusCode(), all.body());
        assertTrue(all.body().contains("fewer ranks"), all.body());
        assertEquals(0, datasets.heapReserved());
        HttpResponse<String> one = mount("j", 1, 4); // a quarter of the samples per daemon
        assertEquals(200, one.statusCode(), one.body());
        assertEquals(200, send("GET", "j?wait=60000").statusCode());
        assertEquals(200, send("DELETE", "j").statusCode());
        assertEquals(0, datasets.heapReserved());
    }

    /** An index URL larger than the budget (but under the 64 MiB index limit) is refused while it is read. */
    @Test
    void anIndexUrlOverTheBudget_isRefusedBeforeItIsReadWhole() throws Exception {
        long total = 48L << 20;
        AtomicLong sent = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        HttpServer src = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        src.createContext("/index.txt", ex -> {
            byte[] lines = "0 1\n".repeat(1 << 14).getBytes(StandardCharsets.US_ASCII);
            try (ex) {
                ex.sendResponseHeaders(200, 0); // chunked: the size is not announced
                OutputStream out = ex.getResponseBody();
                byte[] head = ("1\nhttp://127.0.0.1:1/data " + total / 4 + "\n").getBytes(StandardCharsets.US_ASCII);
                out.write(head);
                for (long n = head.length; n < total; n += lines.length) {
                    out.write(lines);
                    sent.addAndGet(lines.length);
                }
            } catch (IOException e) {
                // the daemon stopped reading
            } finally {
                done.countDown();
            }
        });
        src.start();
        open.add(() -> src.stop(0));
        var body = JSON.createObjectNode().put("index", "http://127.0.0.1:" + src.getAddress().getPort() + "/index.txt")
                .put("globalBatch", 1).put("dpSize", 1);
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + "u/mount"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(413, r.statusCode(), r.body());
        assertTrue(r.body().contains("heap budget"), r.body());
        assertEquals(0, datasets.heapReserved());
        assertTrue(done.await(60, TimeUnit.SECONDS), "the source is still sending");
        assertTrue(sent.get() < total / 2, "the daemon read " + sent.get() + " of " + total + " bytes first");
    }
}
