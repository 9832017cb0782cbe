package io.tenplex.server.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.datasets.streams.StreamService;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.RestServer;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A daemon's stream routes over real HTTP: hostile or ill-timed calls get clear answers and lose nothing. */
class StreamRoutesTest {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final DaemonLink link = DaemonLink.plain(null);
    private String base;
    private String self;

    @BeforeEach
    void start() throws Exception {
        TensorStore store = new TensorStore(new Allocator(1 << 20));
        open.add(store);
        RestServer rest = new RestServer(store, null);
        open.add(rest);
        StreamService streams = new StreamService(new HttpStreamPeers(link));
        open.add(streams);
        streams.allowPeers(List.of(), io.tenplex.datasets.SourcePolicy.none()); // no other daemon
        rest.addControl(JobLayout.API_PREFIX, new StreamRoutes(streams, link));
        InetSocketAddress a = rest.start("127.0.0.1", 0);
        streams.setSelf("127.0.0.1", a.getPort());
        self = "127.0.0.1:" + a.getPort();
        base = "http://" + self + JobLayout.API_PREFIX + "j/streams";
    }

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private HttpResponse<byte[]> send(String method, String path, String body) throws Exception {
        return link.http().send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Content-Type", body.startsWith("{") ? "application/json" : "application/octet-stream")
                .method(method, HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    private static void assertStatus(int status, HttpResponse<byte[]> r) {
        assertEquals(status, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
    }

    private int population() throws Exception {
        String s = new String(send("GET", "", "").body(), StandardCharsets.UTF_8);
        int i = s.indexOf("\"population\":");
        return Integer.parseInt(s.substring(i + 13, s.indexOf(',', i)));
    }

    @Test
    void fractionalNumbers_areRefused() throws Exception {
        assertStatus(400, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10.7}"));
        assertStatus(400, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10, \"seed\": 1.5}"));
        assertStatus(400, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10, \"ranks\": [\"a b:1\"]}"));
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
    }

    @Test
    void aPushForARankBeyondAChangingConfig_isToldToPushAgain() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
        HttpResponse<byte[]> relayed = send("POST", "/samples?rank=2&hop=1", "x"); // from a daemon with dp 3
        assertStatus(429, relayed);
        assertTrue(relayed.headers().firstValue("Retry-After").isPresent());
        assertStatus(400, send("POST", "/samples?rank=2", "x")); // asked by a client: a bad rank
        assertStatus(200, send("POST", "/export", ""));
        assertStatus(429, send("POST", "/samples?rank=2", "x")); // being re-partitioned
        assertStatus(200, send("POST", "/unfreeze", ""));
    }

    @Test
    void peerSteps_outsideTheirPhase_areRefusedOrChangeNothing() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
        for (int i = 0; i < 5; i++) {
            assertStatus(200, send("POST", "/samples", "s" + i));
        }
        String same = "{\"policy\": \"fifo\", \"capacity\": 10, \"ranks\": [\"" + self + "\"]}";
        assertStatus(200, send("PUT", "/config", same));
        assertEquals(5, population());
        assertStatus(409, send("PUT", "/config", "{\"policy\": \"fifo\", \"capacity\": 20, \"ranks\": [\"" + self
                + "\"]}"));
        assertStatus(409, send("PUT", "/config?create=true", same));
        assertStatus(409, send("POST", "/import", "\0\0\0\0"));
        assertStatus(409, send("POST", "/export?next=true", ""));
        assertStatus(200, send("POST", "/unfreeze", ""));
        assertStatus(403, send("PUT", "/config", "{\"policy\": \"fifo\", \"capacity\": 10, \"ranks\": "
                + "[\"127.0.0.1:1\"]}"));
        assertEquals(5, population());
    }

    @Test
    void export_comesInBoundedPages() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 30, \"max_sample_bytes\": 1048576}"));
        String mib = "x".repeat(1 << 20);
        for (int i = 0; i < 20; i++) {
            assertStatus(200, send("POST", "/samples", mib));
        }
        HttpResponse<byte[]> first = send("POST", "/export", "{\"ranks\": [\"" + self + "\"]}");
        assertStatus(200, first);
        assertEquals("true", first.headers().firstValue("X-Tenplex-More").orElse(""));
        assertTrue(first.body().length <= StreamService.MESSAGE_BYTES + 64, "" + first.body().length);
        assertStatus(409, send("POST", "/export", "")); // once
        assertStatus(200, send("POST", "/export?next=true", ""));
        assertStatus(200, send("POST", "/unfreeze", "")); // what was not taken goes back
        assertTrue(population() > 0);
    }

    /** A relayed batch whose reader went away before it came is sent back at once, in its place. */
    @Test
    void aRelayedBatchWhoseReaderIsGone_isSentBack() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
        for (String s : List.of("a", "b", "c")) {
            assertStatus(200, send("POST", "/samples", s));
        }
        var req = new io.tenplex.server.ControlHandler.Request("GET", JobLayout.API_PREFIX + "j/streams/ranks/0/batch",
                java.util.Map.of("size", List.of("2")), null, new byte[0],
                java.util.concurrent.CompletableFuture.completedFuture(null));
        new StreamRelay(link).relayRead(self, req, 0).get(10, java.util.concurrent.TimeUnit.SECONDS);
        long end = System.currentTimeMillis() + 10_000;
        while (population() != 3) {
            assertTrue(System.currentTimeMillis() < end, "the batch did not come back: population " + population());
            Thread.onSpinWait();
        }
    }

    /**
     * A relayed batch that the relaying daemon cannot write to its reader (the reader went away just
     * after the holding daemon answered) goes back to the holding daemon, in its place (FIFO: first).
     */
    @Test
    void aRelayedBatchTheReaderNeverGot_isSentBack_andReadAgainInOrder() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
        for (String s : List.of("a", "b", "c")) {
            assertStatus(200, send("POST", "/samples", s));
        }
        var req = new io.tenplex.server.ControlHandler.Request("GET", JobLayout.API_PREFIX + "j/streams/ranks/0/batch",
                java.util.Map.of("size", List.of("2")), null, new byte[0]);
        var relayed = new StreamRelay(link).relayRead(self, req, 0).get(10, java.util.concurrent.TimeUnit.SECONDS);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(relayed.body());
        assertEquals(2, b.getInt(), "the reader's batch holds a and b");
        assertEquals(1, population());
        relayed.unsent().run(); // its write failed
        long end = System.currentTimeMillis() + 10_000;
        while (population() != 3) {
            assertTrue(System.currentTimeMillis() < end, "the batch did not come back: population " + population());
            Thread.onSpinWait();
        }
        java.nio.ByteBuffer all = java.nio.ByteBuffer.wrap(send("GET", "/ranks/0/batch?size=3", "").body());
        assertEquals(3, all.getInt());
        all.getInt();
        StringBuilder order = new StringBuilder();
        for (int k = 0; k < 3; k++) {
            byte[] x = new byte[all.getInt()];
            all.get(x);
            order.append(new String(x, StandardCharsets.UTF_8));
        }
        assertEquals("abc", order.toString());
        String st = new String(send("GET", "", "").body(), StandardCharsets.UTF_8);
        assertTrue(st.contains("\"delivered\":3,") && st.contains("\"population\":0,"), st);
    }

    /**
     * A relayed batch its reader got, after which the reader closes its connection (a trainer that
     * stops after its last batch) before the relaying daemon looks at whether it is gone: the batch
     * is not sent back (it would be read twice).
     */
    @Test
    void aRelayedBatchTheReaderGot_thenClosing_isNotSentBack() throws Exception {
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10}"));
        assertStatus(200, send("POST", "/samples", "a"));
        var closed = new java.util.concurrent.CompletableFuture<Void>();
        var req = new io.tenplex.server.ControlHandler.Request("GET", JobLayout.API_PREFIX + "j/streams/ranks/0/batch",
                java.util.Map.of("size", List.of("2"), "wait", List.of("10000")), null, new byte[0], closed);
        var answer = new StreamRelay(link).relayRead(self, req, 10_000); // waits: one sample only
        // as ControlCall: the answer is written, the reader reads it and closes, all before the relay looks
        answer.thenRun(() -> closed.complete(null));
        for (String s : List.of("b", "c")) { // b answers the read
            assertStatus(200, send("POST", "/samples", s));
        }
        var relayed = answer.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(2, java.nio.ByteBuffer.wrap(relayed.body()).getInt(), "the reader's batch holds a and b");
        long end = System.currentTimeMillis() + 3_000;
        while (System.currentTimeMillis() < end) {
            assertEquals(1, population(), "the batch the reader got came back");
            Thread.sleep(50);
        }
        String st = new String(send("GET", "", "").body(), StandardCharsets.UTF_8);
        assertTrue(st.contains("\"delivered\":2,"), st);
    }

    @Test
    void samplesGivenBackByAPeer_areHeldAgainInOrder_andOnesOverTheLimitAreRefused() throws Exception {
        int size = (1 << 20) + 1;
        assertStatus(201, send("POST", "", "{\"policy\": \"fifo\", \"capacity\": 10, \"max_sample_bytes\": " + size + "}"));
        List<io.tenplex.datasets.streams.Sample> back = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            byte[] x = new byte[size];
            java.util.Arrays.fill(x, (byte) ('a' + k));
            back.add(new io.tenplex.datasets.streams.Sample(100 + k, x, 1)); // read once, by a batch its reader never got
        }
        HttpStreamPeers peer = new HttpStreamPeers(link);
        peer.giveBack(self, "j", 0, back);
        assertEquals(3, population());
        java.nio.ByteBuffer all = java.nio.ByteBuffer.wrap(send("GET", "/ranks/0/batch?size=3", "").body());
        assertEquals(3, all.getInt());
        all.getInt();
        StringBuilder order = new StringBuilder();
        for (int k = 0; k < 3; k++) {
            byte[] x = new byte[all.getInt()];
            all.get(x);
            assertEquals(size, x.length);
            order.append((char) x[size - 1]);
        }
        assertEquals("abc", order.toString());

        List<io.tenplex.datasets.streams.Sample> over = List.of(new io.tenplex.datasets.streams.Sample(7, new byte[4], 1),
                new io.tenplex.datasets.streams.Sample(8, new byte[size + 1], 1));
        RuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(RuntimeException.class,
                () -> peer.giveBack(self, "j", 0, over));
        assertTrue(e.getMessage().contains("over job j's limit"), e.getMessage());
        assertEquals(0, population()); // neither was taken
    }
}
