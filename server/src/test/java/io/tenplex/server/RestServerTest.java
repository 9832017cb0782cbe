package io.tenplex.server;

import io.tenplex.store.Npy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Crc32c;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The REST server over a real loopback socket: compatibility routes, /api/v1, and every refusal. */
class RestServerTest extends ServedStoreTest {
    private static final long BUDGET = 1 << 20;
    private final HttpClient http = HttpClient.newHttpClient();
    private String base;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(BUDGET, 4096), 1024);
    }

    @BeforeEach
    void address() {
        base = base();
    }

    private HttpResponse<byte[]> send(String method, String path, String contentType, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .method(method, body == null ? BodyPublishers.noBody() : BodyPublishers.ofByteArray(body));
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        return http.send(b.build(), BodyHandlers.ofByteArray());
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    @Test
    void compat_uploadTensor_thenQueryRange() throws Exception {
        HttpResponse<byte[]> up = send("POST", "/upload?path=/job/a/w.numpy.ndarray&dtype=float32&dims=3,4",
                "x-tensor", Fixtures.iota32(12));
        assertEquals(200, up.statusCode());
        assertEquals(0, up.body().length);
        HttpResponse<byte[]> q = send("GET", "/query?path=/job/a/w.numpy.ndarray&range=1:3,1:3", "x-tensor", null);
        assertEquals(200, q.statusCode());
        assertEquals("f32", q.headers().firstValue("x-tensor-dtype").orElseThrow());
        assertEquals("2,2", q.headers().firstValue("x-tensor-dims").orElseThrow());
        assertArrayEquals(floats(5, 6, 9, 10), q.body());
        HttpResponse<byte[]> cols = send("GET", "/query?path=/job/a/w.numpy.ndarray&range=:,2:", null, null);
        assertEquals("3,2", cols.headers().firstValue("x-tensor-dims").orElseThrow());
        assertArrayEquals(floats(2, 3, 6, 7, 10, 11), cols.body());
        assertTrue(q.headers().firstValue("x-tensor-crc32c").isEmpty(), "a strided read has no stored checksum");
        HttpRequest want = HttpRequest.newBuilder(URI.create(base + "/api/v1/tensors/job/a/w.numpy.ndarray?range=1:3,1:3"))
                .header("x-want-crc32c", "1").build();
        HttpResponse<byte[]> withCrc = http.send(want, BodyHandlers.ofByteArray());
        assertEquals(Crc32c.hex(Crc32c.of(ByteBuffer.wrap(floats(5, 6, 9, 10)))),
                withCrc.headers().firstValue("x-tensor-crc32c").orElseThrow());
        HttpResponse<byte[]> whole = send("GET", "/query?path=/job/a/w.numpy.ndarray", "x-tensor", null);
        assertArrayEquals(Fixtures.iota32(12), whole.body());
        assertEquals(Crc32c.hex(Crc32c.of(ByteBuffer.wrap(Fixtures.iota32(12)))),
                whole.headers().firstValue("x-tensor-crc32c").orElseThrow());
    }

    @Test
    void compat_dirListing_prefixLookup_andDelete() throws Exception {
        send("POST", "/upload?path=/job/a/save/0/w.numpy.ndarray&dtype=f32&dims=2", "x-tensor", Fixtures.iota32(2));
        send("POST", "/upload?path=/job/a/save/0/step.int", "int", "7".getBytes(StandardCharsets.UTF_8));
        send("POST", "/upload?path=/job/a/iter", "text/plain", "100".getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> dir = send("GET", "/query?path=/job/a", "x-dir", null);
        assertEquals("txt", dir.headers().firstValue("dtype").orElseThrow());
        assertEquals("/job/a/save/0/w.numpy.ndarray.meta\n/job/a/save/0/w.numpy.ndarray\n/job/a/save/0/step.int\n"
                + "/job/a/iter", text(dir));
        HttpResponse<byte[]> step = send("GET", "/query?path=/job/a/save/0/step", "text", null);
        assertEquals("int", step.headers().firstValue("dtype").orElseThrow());
        assertEquals("7", text(step));
        HttpResponse<byte[]> w = send("GET", "/query?path=/job/a/save/0/w", null, null);
        assertEquals("numpy.ndarray.meta", w.headers().firstValue("dtype").orElseThrow());
        assertEquals("f32\n1\n2\n", text(w));
        HttpResponse<byte[]> iter = send("GET", "/query?path=job/a/iter", "x-file", null);
        assertEquals("text", iter.headers().firstValue("dtype").orElseThrow());
        assertEquals("100", text(iter));
        HttpResponse<byte[]> del = send("DELETE", "/delete?path=/job/a/save", null, null);
        assertEquals("3 2\n", text(del));
        HttpResponse<byte[]> again = send("DELETE", "/delete1?path=/job/a/save", null, null);
        assertEquals(417, again.statusCode());
        assertEquals("node not exist", text(again));
        assertEquals(405, send("GET", "/delete?path=/job", null, null).statusCode());
        assertEquals(404, send("GET", "/query?path=/job/none", "x-dir", null).statusCode());
    }

    @Test
    void compat_fileReplace_needsHeader() throws Exception {
        send("POST", "/upload?path=/job/a/iter", "text/plain", "1".getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> again = send("POST", "/upload?path=/job/a/iter", "text/plain", "2".getBytes());
        assertEquals(409, again.statusCode());
        HttpRequest rep = HttpRequest.newBuilder(URI.create(base + "/upload?path=/job/a/iter"))
                .header("Content-Type", "text/plain").header("x-replace", "true")
                .POST(BodyPublishers.ofByteArray("2".getBytes())).build();
        assertEquals(200, http.send(rep, BodyHandlers.ofByteArray()).statusCode());
        assertEquals("2", text(send("GET", "/query?path=/job/a/iter", null, null)));
    }

    @Test
    void compat_tarUpload_unpacksUnderPrefix_andFoldsSidecars() throws Exception {
        byte[] tar = Tar.of(Map.of("a/x.txt", "hello".getBytes(), "w.numpy.ndarray.meta", "f32\n1\n2\n".getBytes(),
                "w.numpy.ndarray", Fixtures.iota32(2)));
        HttpResponse<byte[]> r = send("POST", "/upload?prefix=/job/t", "application/x-tar", tar);
        assertEquals(200, r.statusCode(), text(r));
        assertEquals("hello", text(send("GET", "/api/v1/files/job/t/a/x.txt", null, null)));
        HttpResponse<byte[]> w = send("GET", "/query?path=/job/t/w.numpy.ndarray", "x-tensor", null);
        assertEquals("2", w.headers().firstValue("x-tensor-dims").orElseThrow());
        HttpResponse<byte[]> bad = send("POST", "/upload?prefix=/job/u", "application/x-tar", "not a tar".getBytes());
        assertEquals(400, bad.statusCode());
        assertEquals(404, send("GET", "/api/v1/stat/job/u", null, null).statusCode());
    }

    /** Which files are folded as sidecars: only {@code x.meta} beside a file {@code x} of the size it names. */
    @Test
    void compat_tarUpload_foldsOnlyMatchingSidecars() throws Exception {
        Map<String, byte[]> files = new java.util.HashMap<>();
        files.put("..meta", "u8\n1\n1\n".getBytes()); // would be the sidecar of "."
        files.put(".meta", "u8\n1\n1\n".getBytes()); // would be the sidecar of ""
        files.put("a", new byte[4]);
        files.put("a.meta", "u8\n1\n4\n".getBytes()); // a has 4 bytes: a's sidecar
        files.put("a.meta.meta", "u8\n1\n7\n".getBytes()); // a.meta has 7: its sidecar too
        files.put("b", new byte[3]);
        files.put("b.meta", "u8\n1\n4\n".getBytes()); // names 4 bytes, b has 3: two files
        files.put("c.meta", "u8\n1\n1\n".getBytes()); // no c: a file
        HttpResponse<byte[]> r = send("POST", "/upload?prefix=/job/side", "application/x-tar", Tar.of(files));
        assertEquals(200, r.statusCode(), text(r));
        Map<String, String> kinds = new java.util.TreeMap<>();
        for (io.tenplex.store.Entry e : store.list(StorePath.parse("/job/side"), true)) {
            kinds.put(e.name(), e.meta() == null ? "file " + e.size() : e.meta().toString());
        }
        // a.meta is listed as the tensor a's sidecar, as the store shows every tensor's
        assertEquals("{..meta=file 7, .meta=file 7, a=" + TensorMeta.of(DType.U8, 4) + ", a.meta=file 7, b=file 3, "
                + "b.meta=file 7, c.meta=file 7}", kinds.toString());
    }

    @Test
    void api_npyRoundTrip_headStatListChecksums() throws Exception {
        byte[] data = new byte[5000 * 4];
        new Random(1).nextBytes(data);
        byte[] npy = concat(Npy.header(io.tenplex.ptc.TensorMeta.of(io.tenplex.ptc.DType.I32, 50, 100)), data);
        HttpResponse<byte[]> put = send("PUT", "/api/v1/tensors/m/t", "application/x-npy", npy);
        assertEquals(201, put.statusCode(), text(put));
        assertTrue(text(put).contains("\"shape\":[50,100]"));
        HttpRequest get = HttpRequest.newBuilder(URI.create(base + "/api/v1/tensors/m/t"))
                .header("Accept", "application/x-npy").build();
        assertArrayEquals(npy, http.send(get, BodyHandlers.ofByteArray()).body());
        HttpResponse<byte[]> sub = send("GET", "/api/v1/tensors/m/t?range=10:12,-2:", null, null);
        assertEquals("2,2", sub.headers().firstValue("x-tensor-dims").orElseThrow());
        assertArrayEquals(concat(Arrays.copyOfRange(data, (10 * 100 + 98) * 4, (10 * 100 + 100) * 4),
                Arrays.copyOfRange(data, (11 * 100 + 98) * 4, (11 * 100 + 100) * 4)), sub.body());
        HttpResponse<byte[]> head = send("HEAD", "/api/v1/tensors/m/t", null, null);
        assertEquals("20000", head.headers().firstValue("content-length").orElseThrow());
        assertEquals(0, head.body().length);
        HttpResponse<byte[]> stat = send("GET", "/api/v1/stat/m/t", null, null);
        assertTrue(text(stat).contains("\"type\":\"tensor\""), text(stat));
        assertTrue(text(send("GET", "/api/v1/dirs/m", null, null)).contains("\"name\":\"t\""));
        HttpResponse<byte[]> sums = send("GET", "/api/v1/checksums/m/t", null, null);
        assertTrue(text(sums).contains("\"crc32c\":\"" + Crc32c.hex(Crc32c.of(ByteBuffer.wrap(data))) + "\""),
                text(sums));
        assertEquals(200, send("DELETE", "/api/v1/tensors/m/t", null, null).statusCode());
        assertEquals(0, store.allocator().usedBytes());
    }

    @Test
    void api_healthAndMetrics() throws Exception {
        assertEquals("{\"status\":\"ok\"}", text(send("GET", "/api/v1/health", null, null)));
        send("PUT", "/api/v1/files/f", null, new byte[10]);
        String metrics = text(send("GET", "/metrics", null, null));
        assertTrue(metrics.contains("tenplex_store_used_bytes 10.0"), metrics);
        assertTrue(metrics.contains("tenplex_http_requests_total{route=\"files\",method=\"PUT\",status=\"201\",} 1.0"),
                metrics);
    }

    /** Every kind of bad input on one connection: a clear status, the store unchanged, the socket still usable. */
    @Test
    void badInput_getsReason_keepsConnection_andLeavesStoreUnchanged() throws Exception {
        Fixtures.putF32(store, "/job/a/w", 3, 4);
        long used = store.allocator().usedBytes();
        Map<String, String> tensor = Map.of("Content-Type", "x-tensor");
        try (RawHttp c = new RawHttp(server.port())) {
            expect(c.send("GET", "/query?path=/job/a/w&range=0:2,3:9", tensor, null), 400,
                    "range 3:9 out of bounds for dim 1 of size 4");
            expect(c.send("GET", "/query?path=/job/a/w&range=x:y", tensor, null), 400, "is not an integer");
            expect(c.send("GET", "/query?path=/job/a/w&range=0:1,0:1,0:1", tensor, null), 400, "3 slices");
            expect(c.send("GET", "/query?path=/job/a/nothing", tensor, null), 404, "node not exist");
            expect(c.send("POST", "/upload?path=/job/b&dtype=complex256&dims=2", tensor, new byte[8]), 400,
                    "unknown dtype 'complex256'");
            expect(c.send("POST", "/upload?path=/job/b&dtype=f32&dims=2,x", tensor, new byte[8]), 400, "dims");
            expect(c.send("POST", "/upload?path=/job/b&dtype=f32&dims=3", tensor, new byte[8]), 400,
                    "body has 8 bytes but tensor f32[3] needs 12");
            expect(c.send("POST", "/upload?path=/job/../b&dtype=f32&dims=2", tensor, new byte[8]), 400, "'..'");
            expect(c.send("POST", "/upload?path=/job/a/w&dtype=f32&dims=12", tensor, new byte[48]), 409, "exists");
            expect(c.send("POST", "/upload?path=/job/a/w/x&dtype=f32&dims=1", tensor, new byte[4]), 409,
                    "not a directory");
            expect(c.send("POST", "/upload?path=/job/a/w.meta", Map.of(), new byte[4]), 409, "sidecar");
            expect(c.send("POST", "/upload?path=/job/big&dtype=u8&dims=2000000", tensor, new byte[0]), 400, "needs");
            expect(c.send("PUT", "/api/v1/tensors/big?dtype=u8&dims=2000000", Map.of(), null), 413,
                    "exceed the memory budget");
            expect(c.send("PUT", "/api/v1/files/big", Map.of(), new byte[(int) (BUDGET - used + 1)]), 507,
                    "exceed the memory budget");
            expect(c.send("GET", "/nowhere", Map.of(), null), 404, "no route");
            expect(c.send("PATCH", "/api/v1/tensors/job/a/w", Map.of(), null), 405, "not allowed");
            expect(c.send("GET", "/api/v1/tensors/job/a/w?range=0:1", Map.of(), null), 200, null);
        }
        assertEquals(used, store.allocator().usedBytes());
        assertEquals(1, store.walk(StorePath.root(), false).size());
    }

    @Test
    void chunkedUploads_wrongLength_refused_connectionKept_noMemoryLeft() throws Exception {
        String head = "POST /upload?path=/t&dtype=f32&dims=2 HTTP/1.1\r\nHost: x\r\nContent-Type: x-tensor\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n";
        try (RawHttp c = new RawHttp(server.port())) {
            expect(c.raw(head + "c\r\n" + "x".repeat(12) + "\r\n0\r\n\r\n"), 400, "longer than the expected 8");
            expect(c.raw(head + "4\r\nabcd\r\n0\r\n\r\n"), 400, "body has 4 bytes but tensor f32[2] needs 8");
            String file = "POST /upload?path=/f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
            expect(c.raw(file + "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), 200, null);
        }
        assertTrue(store.stat(StorePath.parse("/t")).isEmpty());
        assertEquals(5, store.allocator().usedBytes());
        assertEquals("abcde", text(send("GET", "/api/v1/files/f", null, null)));
    }

    @Test
    void expectContinue_refusedEarly() throws Exception {
        try (RawHttp c = new RawHttp(server.port())) {
            RawHttp.Response r = c.send("POST", "/upload?path=/t&dtype=f32&dims=2",
                    Map.of("Content-Type", "x-tensor", "Expect", "100-continue", "Content-Length", "9"), null);
            assertEquals(400, r.status());
            assertEquals("close", r.headers().get("connection"));
        }
        assertTrue(store.stat(StorePath.parse("/t")).isEmpty());
    }

    @Test
    void token_requiredExceptHealth() throws Exception {
        server.close();
        server = new RestServer(store, "s3cret");
        base = "http://127.0.0.1:" + server.start("127.0.0.1", 0).getPort();
        assertEquals(200, send("GET", "/api/v1/health", null, null).statusCode());
        HttpResponse<byte[]> no = send("GET", "/api/v1/dirs/", null, null);
        assertEquals(401, no.statusCode());
        assertEquals("Bearer", no.headers().firstValue("www-authenticate").orElseThrow());
        HttpRequest wrong = HttpRequest.newBuilder(URI.create(base + "/api/v1/dirs/"))
                .header("Authorization", "Bearer nope").build();
        assertEquals(401, http.send(wrong, BodyHandlers.ofByteArray()).statusCode());
        HttpRequest ok = HttpRequest.newBuilder(URI.create(base + "/api/v1/dirs/"))
                .header("Authorization", "Bearer s3cret").build();
        assertEquals(200, http.send(ok, BodyHandlers.ofByteArray()).statusCode());
        HttpRequest lower = HttpRequest.newBuilder(URI.create(base + "/api/v1/dirs/"))
                .header("Authorization", "bearer s3cret").build(); // the scheme is case-insensitive
        assertEquals(200, http.send(lower, BodyHandlers.ofByteArray()).statusCode());
    }

    private static void expect(RawHttp.Response r, int status, String reasonPart) {
        assertEquals(status, r.status(), r.text());
        if (reasonPart != null) {
            assertTrue(r.text().contains(reasonPart), () -> "'" + r.text() + "' should contain '" + reasonPart + "'");
            assertFalse(r.text().strip().contains("\n"), "reason should be one line");
        }
    }

    static byte[] floats(int... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int x : v) {
            b.putFloat(x);
        }
        return b.array();
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
