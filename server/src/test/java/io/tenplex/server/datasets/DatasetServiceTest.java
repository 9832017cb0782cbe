package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import io.tenplex.datasets.DatasetExecutors;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.IndexBuilders;
import io.tenplex.datasets.ShardPeers;
import io.tenplex.datasets.SourcePolicy;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.ControlHandler;
import io.tenplex.server.RestServer;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Dataset mounts over real HTTP: samples from an HTTP source with range GETs (a JDK server, the only
 * fake here: it stands for a remote object store), from a peer daemon's REST server, and reads that
 * wait for samples still loading.
 */
class DatasetServiceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int N = 60;

    @TempDir
    Path tmp;
    private final List<AutoCloseable> open = new ArrayList<>();
    private HttpServer source;
    private final AtomicInteger sourceRequests = new AtomicInteger();
    private volatile CountDownLatch hold = new CountDownLatch(0);
    private final CountDownLatch firstRequest = new CountDownLatch(1);

    @AfterEach
    void close() throws Exception {
        hold.countDown();
        if (source != null) {
            source.stop(0);
        }
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    /** Newline text: sample i is "sample-<i>-" padded with 'x' to a length that varies with i, plus "\n". */
    private byte[] data() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int i = 0; i < N; i++) {
            b.writeBytes(("sample-" + i + "-" + "x".repeat(i % 7) + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        return b.toByteArray();
    }

    /** Serves {@code bytes} at /data with Range support, waiting on {@link #hold} before answering. */
    private String serve(byte[] bytes) throws Exception {
        source = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        source.createContext("/data", ex -> {
            sourceRequests.incrementAndGet();
            firstRequest.countDown();
            try {
                hold.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            String range = ex.getRequestHeaders().getFirst("Range");
            String[] be = range.substring("bytes=".length()).split("-");
            int b = Integer.parseInt(be[0]);
            int e = Integer.parseInt(be[1]) + 1;
            ex.sendResponseHeaders(206, e - b);
            ex.getResponseBody().write(bytes, b, e - b);
            ex.close();
        });
        source.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4));
        source.start();
        return "http://127.0.0.1:" + source.getAddress().getPort() + "/data";
    }

    private String index(String url, byte[] bytes) throws Exception {
        Path f = tmp.resolve("lines.txt");
        Files.write(f, bytes);
        String local = Files.readString(writeIndex(f));
        return local.replace(f.toAbsolutePath().toString(), url);
    }

    private Path writeIndex(Path f) throws Exception {
        Path idx = tmp.resolve("index.txt");
        try (var w = Files.newBufferedWriter(idx)) {
            new io.tenplex.ptc.data.DatasetIndex(List.of(IndexBuilders.build(f, IndexBuilders.Format.LINES, 0))).write(w);
        }
        return idx;
    }

    private record Daemon(TensorStore store, DatasetRoutes datasets, DatasetService service, InetSocketAddress addr) {}

    private Daemon daemon() throws Exception {
        TensorStore store = new TensorStore(new Allocator(64L << 20));
        open.add(store);
        DatasetService ds = new DatasetService(store.allocator(), sources(),
                new HttpShardPeers(io.tenplex.server.peer.DaemonLink.plain(null)), DatasetExecutors.standard());
        DatasetRoutes routes = new DatasetRoutes(ds);
        RestServer rest = new RestServer(store, null);
        rest.addControl(DatasetRoutes.PREFIX, routes);
        InetSocketAddress addr = rest.start("127.0.0.1", 0);
        open.add(rest);
        open.add(ds);
        return new Daemon(store, routes, ds, addr);
    }

    /** The temporary directory as data root; loopback (the fake source and the peer daemons) allowed. */
    private SourcePolicy sources() {
        return SourcePolicy.none().withDataRoots(List.of(tmp)).withAllowedHosts(List.of("127.0.0.1"));
    }

    private static byte[] file(DatasetRoutes ds, String job, String path) throws Exception {
        return fileAsync(ds, job, path).get(30, TimeUnit.SECONDS).body();
    }

    private static CompletableFuture<ControlHandler.Response> fileAsync(DatasetRoutes ds, String job, String path) {
        return ds.handle(new ControlHandler.Request("GET", DatasetRoutes.PREFIX + job + "/files/" + path, Map.of(), null,
                new byte[0]));
    }

    private static JsonNode status(DatasetRoutes ds, String job) throws Exception {
        return JSON.readTree(ds.handle(new ControlHandler.Request("GET", DatasetRoutes.PREFIX + job, Map.of(), null,
                new byte[0])).get().body());
    }

    /** The bytes rank r must read: its samples of every batch, in order. */
    private static byte[] expected(byte[] data, int samples, MountParams p, int rank) {
        int[] starts = new int[samples + 1];
        for (int i = 0, s = 0; i < data.length; i++) {
            if (data[i] == '\n') {
                starts[++s] = i + 1;
            }
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int id : new DataPartition(samples, p).rankSamples(rank)) {
            out.write(data, starts[id], starts[id + 1] - starts[id]);
        }
        return out.toByteArray();
    }

    private static ObjectNode mount(String index, long progress, int dp) {
        return JSON.createObjectNode().put("indexText", index).put("progress", progress).put("globalBatch", 8)
                .put("dpSize", dp).put("seed", 3).put("samplesPerFile", 5);
    }

    @Test
    void readsWaitForSamplesStillLoading_andTheStatusReportsTheWait() throws Exception {
        byte[] data = data();
        Daemon a = daemon();
        hold = new CountDownLatch(1);
        a.datasets().mount("j", mount(index(serve(data), data), 0, 2));
        CompletableFuture<ControlHandler.Response> read = fileAsync(a.datasets(), "j", "dataset/rank-1/samples");
        assertTrue(firstRequest.await(30, TimeUnit.SECONDS));
        assertFalse(read.isDone(), "a read of samples that are not loaded returned");
        hold.countDown();
        assertArrayEquals(expected(data, N, new MountParams(0, 8, 2, 3, true, 5), 1),
                read.get(30, TimeUnit.SECONDS).body());
        JsonNode load = status(a.datasets(), "j").path("load");
        assertTrue(load.path("readsThatWaited").asLong() >= 1, load.toString());
        assertTrue(load.path("readWaitMillis").asDouble() > 0, load.toString());
        assertEquals(7, status(a.datasets(), "j").path("batches").asInt());
        assertEquals(4, status(a.datasets(), "j").path("dropped").asInt());
    }

    @Test
    void aRemountOnAnotherDaemon_loadsFromThePeer_notTheSource() throws Exception {
        byte[] data = data();
        Daemon a = daemon();
        String index = index(serve(data), data);
        a.datasets().mount("j", mount(index, 0, 2));
        for (int r = 0; r < 2; r++) {
            assertArrayEquals(expected(data, N, new MountParams(0, 8, 2, 3, true, 5), r),
                    file(a.datasets(), "j", "dataset/rank-" + r + "/samples"));
        }
        int fromSource = sourceRequests.get();
        assertEquals(56, fromSource); // 7 batches of 8, one range GET each
        Daemon b = daemon();
        b.datasets().mount("j", mount(index, 16, 3).set("peers", JSON.createArrayNode().add("127.0.0.1:"
                + a.addr().getPort())));
        for (int r = 0; r < 3; r++) {
            assertArrayEquals(expected(data, N, new MountParams(16, 8, 3, 3, true, 5), r),
                    file(b.datasets(), "j", "dataset/rank-" + r + "/samples"));
        }
        assertEquals(fromSource, sourceRequests.get(), "the source was read again");
        // every sample is readable before the loader has counted it: wait for the end of loading
        assertTrue(b.service().awaitLoaded("j", java.time.Duration.ofSeconds(30)));
        JsonNode load = status(b.datasets(), "j").path("load");
        assertEquals("loaded", load.path("state").asText(), load.toString());
        assertEquals(40, load.path("fromPeers").asInt(), load.toString());
        // the prototype layout agrees with the simple one
        String list = new String(file(b.datasets(), "j", "progress/16/cluster-of-3/rank-002/list.txt"),
                StandardCharsets.UTF_8);
        assertEquals("/job/j/progress/16/cluster-of-3/rank-002/0000.tf_record\n"
                + "/job/j/progress/16/cluster-of-3/rank-002/0001.tf_record\n", list);
        assertEquals("2 5\n", new String(file(b.datasets(), "j", "progress/16/cluster-of-3/rank-002/batch-sizes.txt"),
                StandardCharsets.UTF_8));
    }

    @Test
    void badMounts_areRefused_andLeaveTheCurrentMount() throws Exception {
        byte[] data = data();
        Daemon a = daemon();
        Path f = tmp.resolve("lines.txt");
        Files.write(f, data);
        String index = Files.readString(writeIndex(f));
        a.datasets().mount("j", mount(index, 0, 2));
        for (ObjectNode bad : List.of(mount(index, 3, 2), mount(index, 0, 0), mount("2\nx 1\n", 0, 2),
                mount(index.replace(f.toAbsolutePath().toString(), tmp.resolve("missing").toString()), 0, 2),
                (ObjectNode) mount(index, 0, 2).set("ranks", JSON.createArrayNode().add(2)),
                mount(index, 0, 2).put("globalBatch", 100))) {
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> a.datasets().handle(new ControlHandler.Request("POST", DatasetRoutes.PREFIX + "j/mount",
                            Map.of(), "application/json", JSON.writeValueAsBytes(bad))).get());
            assertTrue(e.getCause() instanceof IllegalArgumentException || (e.getCause() instanceof StoreException se
                    && se.kind() == StoreException.Kind.FORBIDDEN), e.getCause().toString());
        }
        ObjectNode huge = mount(index, 0, 2);
        TensorStore small = new TensorStore(new Allocator(64));
        open.add(small);
        DatasetService tinyService = new DatasetService(small.allocator(), sources(), ShardPeers.NONE,
                DatasetExecutors.standard());
        open.add(tinyService);
        DatasetRoutes tiny = new DatasetRoutes(tinyService);
        StoreException full = org.junit.jupiter.api.Assertions.assertThrows(StoreException.class,
                () -> tiny.mount("j", huge));
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, full.kind());
        assertEquals(0, small.allocator().usedBytes());
        assertEquals(2, status(a.datasets(), "j").path("dpSize").asInt());
        assertArrayEquals(expected(data, N, new MountParams(0, 8, 2, 3, true, 5), 0),
                file(a.datasets(), "j", "dataset/rank-0/samples"));
    }
}
