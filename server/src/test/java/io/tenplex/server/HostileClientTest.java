package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What a hostile or unlucky client sends, over real sockets to a real server: odd sizes, malformed
 * bodies and heads, content types in other cases, floods of method names, slow and stalled clients,
 * large control bodies and foreign origins. Each answer is a clear 4xx, the store keeps its content,
 * and the memory accounting returns to where it was.
 */
class HostileClientTest extends ServedStoreTest {
    private static final long BUDGET = 256L << 20;
    private static final ServerLimits FAST = ServerLimits.DEFAULTS.withTimeouts(Duration.ofMillis(800),
            Duration.ofMillis(800), Duration.ofMillis(800), Duration.ofMillis(800))
            .withAllowedOrigins(List.of("https://ops.example"));

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(BUDGET), 64 << 10);
    }

    @Override
    RestServer newServer(TensorStore store) {
        RestServer s = new RestServer(store, null, FAST);
        s.addControl("/api/v1/echo", req -> CompletableFuture.completedFuture(
                new ControlHandler.Response(200, "application/octet-stream", req.body())));
        return s;
    }

    private RawHttp.Response send(String method, String target, Map<String, String> headers, byte[] body)
            throws IOException {
        try (RawHttp c = new RawHttp(port)) {
            return c.send(method, target, headers, body);
        }
    }



    @ParameterizedTest
    @ValueSource(ints = {1_048_577, 4_000_000, 50_257 * 768 * 2, (1 << 20) + 4095})
    void uploadsOfSizesThatAreNotPageMultiples_areStored(int size) throws Exception {
        byte[] data = new byte[size];
        new java.util.Random(size).nextBytes(data);
        assertEquals(201, send("PUT", "/api/v1/files/a", Map.of(), data).status());
        assertArrayEquals(data, Fixtures.readAll(store, "/a"));
        int elements = size / 4 - 3; // a tensor of an odd byte size too
        RawHttp.Response t = send("PUT", "/api/v1/tensors/t?dtype=f32&dims=" + elements, Map.of(),
                java.util.Arrays.copyOf(data, elements * 4));
        assertEquals(201, t.status(), t.text());
        assertEquals(size + elements * 4L, store.allocator().usedBytes());
    }

    @Test
    void headerOnlyUploadsThatExpectContinue_leaveNoReservationBehind() throws Exception {
        for (int i = 0; i < 10; i++) {
            try (RawHttp c = new RawHttp(port)) {
                c.write(("PUT /api/v1/files/e" + i + " HTTP/1.1\r\nHost: x\r\nContent-Length: 19800000\r\n"
                        + "Expect: 100-continue\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                c.drainUntilClosed(); // 100, then the body deadline answers 408 and closes
            }
        }
        Await.value("used bytes", 0, store.allocator()::usedBytes);
        assertTrue(store.stat(StorePath.parse("/e0")).isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"zz\r\nabc\r\n0\r\n\r\n", "-5\r\nabcde\r\n0\r\n\r\n",
            "100000000000000000000\r\nabc\r\n0\r\n\r\n", "3\nabc\n0\n\n", "3;%EXT%\r\nabc\r\n0\r\n\r\n",
            "3\r\nabcdef\r\n0\r\n\r\n"})
    void malformedChunkedBodies_get400_andReplaceNothing(String body) throws Exception {
        String chunks = body.replace("%EXT%", "x".repeat(70_000));
        Fixtures.putFile(store, "/keep", new byte[] {7, 7, 7}, false);
        long used = store.allocator().usedBytes();
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.raw("PUT /api/v1/files/keep?replace=true HTTP/1.1\r\nHost: x\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n" + chunks);
            assertEquals(400, r.status(), r.text());
            assertEquals(0, c.drainUntilClosed(), "the connection closes after a framing error");
        }
        assertArrayEquals(new byte[] {7, 7, 7}, Fixtures.readAll(store, "/keep"));
        Await.value("used bytes", used, store.allocator()::usedBytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"gzip, chunked", "gzip", "chunked, chunked", "identity"})
    void transferCodingsOtherThanChunked_areRefused(String te) throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.raw("PUT /api/v1/files/g HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te
                    + "\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
            assertEquals(400, r.status(), r.text());
        }
        assertTrue(store.stat(StorePath.parse("/g")).isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {": empty-name\r\n", "X-A: a\u0000b\r\n", "X-A: a\rb\r\n", "Content-Length: 3\r\nContent-Length: 4\r\n",
            "Transfer-Encoding: sdch\r\n", "X-Big: %BIG%\r\n"})
    void malformedHeads_getAnAnswer_andTheConnectionCloses(String header) throws Exception {
        String h = header.replace("%BIG%", "b".repeat(70 * 1024));
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.raw("PUT /api/v1/files/h HTTP/1.1\r\nHost: x\r\n" + h + "\r\nabc");
            assertTrue(r.status() == 400 || r.status() == 431, r.status() + " " + r.text());
            assertEquals(header.contains("%BIG%") ? 431 : 400, r.status(), r.text());
            assertEquals(0, c.drainUntilClosed());
        }
        assertTrue(store.stat(StorePath.parse("/h")).isEmpty());
    }

    @Test
    void contentTypesCompareCaseInsensitively_onTheCompatibilityUpload() throws Exception {
        RawHttp.Response r = send("POST", "/upload?path=/job/a/w&dtype=float32&dims=2,2",
                Map.of("Content-Type", "X-Tensor"), Fixtures.iota32(4));
        assertEquals(200, r.status(), r.text());
        r = send("POST", "/upload?path=/job/a/w&dtype=float32&dims=3", Map.of("Content-Type", "X-TENSOR; v=1",
                "x-replace", "true"), Fixtures.iota32(3));
        assertEquals(200, r.status(), r.text());
        assertEquals("tensor", store.stat(StorePath.parse("/job/a/w")).orElseThrow().type().jsonName());
        assertArrayEquals(Fixtures.iota32(3), Fixtures.readAll(store, "/job/a/w"));
    }

    @Test
    void http11RequestsNameExactlyOneHost() throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            assertEquals(400, c.raw("GET /api/v1/health HTTP/1.1\r\n\r\n").status());
            assertEquals(400, c.raw("GET /api/v1/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status());
            assertEquals(200, c.raw("GET /api/v1/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").status());
        }
    }

    @Test
    void methodNotAllowed_listsTheRoutesOwnMethods_andAbsoluteFormTargetsAreServed() throws Exception {
        RawHttp.Response health = send("PUT", "/api/v1/health", Map.of(), new byte[] {1});
        assertEquals(405, health.status());
        assertEquals("GET, HEAD", health.headers().get("allow"));
        assertEquals("GET", send("PUT", "/api/v1/stat/x", Map.of(), new byte[] {1}).headers().get("allow"));
        assertEquals("DELETE", send("GET", "/delete?path=/x", Map.of(), null).headers().get("allow"));
        Fixtures.putFile(store, "/abs", new byte[] {4, 2}, false);
        RawHttp.Response abs = send("GET", "http://127.0.0.1:" + port + "/api/v1/files/abs", Map.of(), null);
        assertEquals(200, abs.status(), abs.text());
        assertArrayEquals(new byte[] {4, 2}, abs.body());
    }

    @Test
    void methodNamesDoNotBecomeMetricLabels() throws Exception {
        for (int i = 0; i < 50; i++) {
            send("M" + "X".repeat(2000) + i, "/api/v1/files/x", Map.of(), null);
        }
        String metrics = send("GET", "/metrics", Map.of(), null).text();
        assertFalse(metrics.contains("MXXX"), "a method name became a label");
        assertTrue(metrics.contains("method=\"other\""), metrics);
    }

    @Test
    void idleConnections_close_andSlowHeadsGet408() throws Exception {
        try (RawHttp idle = new RawHttp(port); RawHttp slow = new RawHttp(port)) {
            slow.write("GET /api/v1/health HTTP/1.1\r\nHo".getBytes(StandardCharsets.US_ASCII));
            assertEquals(0, idle.drainUntilClosed());
            RawHttp.Response r = slow.read();
            assertEquals(408, r.status(), r.text());
        }
    }

    @Test
    void stalledUploads_releaseTheirReservation_soOthersCanStore() throws Exception {
        try (RawHttp a = new RawHttp(port); RawHttp b = new RawHttp(port)) {
            for (RawHttp c : List.of(a, b)) {
                c.write(("PUT /api/v1/files/big HTTP/1.1\r\nHost: x\r\nContent-Length: " + (BUDGET / 2)
                        + "\r\n\r\nsome").getBytes(StandardCharsets.US_ASCII));
            }
            Await.until("both uploads reserved", () -> store.allocator().usedBytes() == BUDGET);
            RawHttp.Response r = a.read();
            assertEquals(408, r.status(), r.text());
            assertEquals(408, b.read().status());
        }
        Await.value("used bytes", 0, store.allocator()::usedBytes);
        assertEquals(201, send("PUT", "/api/v1/files/next", Map.of(), new byte[1 << 20]).status());
    }

    @Test
    void aReaderThatStopsReading_isClosed_andReleasesTheReplacedTensor() throws Exception {
        int size = 96 << 20;
        Fixtures.putFile(store, "/w", new byte[size], false);
        try (RawHttp reader = new RawHttp(port)) {
            reader.write("GET /api/v1/files/w HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertTrue(reader.readSome(1024) > 0, "the response began");
            Fixtures.putFile(store, "/w", new byte[] {1}, true);
            assertEquals(size + 1L, store.allocator().usedBytes(), "the reader still holds the old bytes");
            Await.value("used bytes", 1, store.allocator()::usedBytes);
            assertTrue(reader.drainUntilClosed() < size, "the stalled response was cut");
        }
    }

    @Test
    void controlBodies_areLimited_typed_andFromAllowedOriginsOnly() throws Exception {
        byte[] json = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        assertEquals(200, send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json"), json).status());
        assertEquals(200, send("POST", "/api/v1/echo", Map.of(), json).status());
        assertEquals(415, send("POST", "/api/v1/echo", Map.of("Content-Type", "text/plain"), json).status());
        assertEquals(415, send("POST", "/api/v1/echo", Map.of("Content-Type", "Application/X-WWW-Form-Urlencoded"),
                json).status());
        assertEquals(403, send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json",
                "Origin", "https://evil.example"), json).status());
        assertEquals(403, send("PUT", "/api/v1/files/o", Map.of("Origin", "null"), json).status());
        assertEquals(200, send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json",
                "Origin", "https://OPS.example"), json).status());
        RawHttp.Response big = send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json"),
                new byte[FAST.controlBody() + 1]);
        assertEquals(413, big.status(), big.text());
        try (RawHttp chunked = new RawHttp(port)) {
            chunked.write(("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            byte[] piece = ("100000\r\n" + "a".repeat(1 << 20) + "\r\n").getBytes(StandardCharsets.US_ASCII);
            int status = 0;
            for (int i = 0; i <= FAST.controlBody() >> 20 && status == 0; i++) {
                try {
                    chunked.write(piece);
                } catch (IOException closed) {
                    status = chunked.read().status();
                }
            }
            if (status == 0) {
                chunked.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                status = chunked.read().status();
            }
            assertEquals(413, status);
        }
        assertTrue(store.stat(StorePath.parse("/o")).isEmpty());
    }

    @Test
    void controlBodiesInFlight_areBoundedOverAllConnections() throws Exception {
        int each = FAST.controlBody();
        int fit = (int) (FAST.controlInFlight() / each);
        List<RawHttp> open = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < fit; i++) {
                RawHttp c = new RawHttp(port);
                open.add(c);
                c.write(("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                        + each + "\r\nExpect: 100-continue\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                assertTrue(c.readSome(64) > 0, "100 Continue: the head was accounted");
            }
            // every declared body is accounted at its head; one more does not fit
            RawHttp.Response r = send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json"),
                    new byte[1024]);
            assertEquals(429, r.status(), r.text());
        } finally {
            for (RawHttp c : open) {
                c.close();
            }
        }
        RawHttp.Response after = null;
        long end = System.nanoTime() + 20_000_000_000L;
        while (after == null || after.status() != 200) { // the closed connections give their bytes back
            assertTrue(System.nanoTime() < end, "in-flight bytes were not given back");
            after = send("POST", "/api/v1/echo", Map.of("Content-Type", "application/json"), new byte[1024]);
        }
    }
}
