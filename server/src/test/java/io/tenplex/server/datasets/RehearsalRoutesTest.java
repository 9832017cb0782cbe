package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import io.tenplex.server.peer.DaemonLink;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The rehearsal routes of two daemons' REST servers over real HTTP, the peer client between them. */
class RehearsalRoutesTest {
    private static final String CONFIG = "{\"classes\": 2, \"perClass\": 3, \"candidates\": 4, \"batch\": 4, \"seed\": 9}";
    private final RehearsalServers servers = new RehearsalServers();
    private final List<String> urls = servers.urls;
    private final DaemonLink link = servers.link;

    @AfterEach
    void close() throws Exception {
        servers.close();
    }

    private void start(int n) throws Exception {
        servers.start(n, 1 << 20);
    }

    private HttpResponse<byte[]> send(String method, String url, byte[] body) throws Exception {
        return servers.send(method, url, body);
    }

    private static void assertRefused(int status, String code, HttpResponse<byte[]> r) {
        assertEquals(status, r.statusCode(), new String(r.body()));
        assertEquals(code, r.headers().firstValue("X-Tenplex-Error-Code").orElse(""));
    }

    private static List<Sample> samples(int origin, int n) {
        List<Sample> s = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            s.add(Tuples.bytesSample(i % 2, new byte[] {(byte) origin, (byte) i}));
        }
        return s;
    }

    @Test
    void configureUpdateSample_globalDrawReachesThePeer_overHttp() throws Exception {
        start(2);
        assertEquals(201, send("PUT", urls.get(0), CONFIG.getBytes()).statusCode());
        assertEquals(200, send("PUT", urls.get(0), CONFIG.getBytes()).statusCode(), "the same again");
        assertEquals(201, send("PUT", urls.get(1), CONFIG.getBytes()).statusCode());
        assertEquals(200, send("POST", urls.get(0) + "/0/update", Tuples.encode(samples(0, 2))).statusCode());
        HttpResponse<byte[]> u = send("POST", urls.get(1) + "/1/update", Tuples.encode(samples(1, 6)));
        assertEquals("{\"appended\":6,\"replaced\":0,\"counts\":[3,3]}", new String(u.body()));
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 30; i++) {
            HttpResponse<byte[]> r = send("GET", urls.get(0) + "/0/sample?r=3", null);
            assertEquals(200, r.statusCode());
            for (Sample s : Tuples.decode(r.body(), 3, 1 << 10)) {
                seen.add(s.tuple()[s.tuple().length - 2] + "/" + s.tuple()[s.tuple().length - 1]);
            }
        }
        assertEquals(8, seen.size(), "2 representatives here and 6 on the peer: " + seen);
        HttpResponse<byte[]> local = send("GET", urls.get(0) + "/0/sample?r=3&scope=local", null);
        assertEquals(2, Tuples.decode(local.body(), 3, 1 << 10).size());
        HttpResponse<byte[]> both = send("POST", urls.get(0) + "/0/update?draw=5&scope=local",
                Tuples.encode(samples(0, 1)));
        assertEquals(3, Tuples.decode(both.body(), 5, 1 << 10).size(), "the update, then a draw from its 3");
        JsonNode status = RehearsalJson.read(send("GET", urls.get(1), null).body());
        assertEquals(6, status.get("representatives").asInt());
    }

    /** One sample whose |u1 part has shape [2^30, 2^30, 2^30, 2^30, 16] and 0 bytes (the product overflows to 0). */
    private static byte[] overflowingShape() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + 4 + 4 + 4 + 3 + 4 + 5 * 8 + 8)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(1).putInt(0).putInt(1).putInt(3).put("|u1".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).putInt(5);
        for (long d : new long[] {1L << 30, 1L << 30, 1L << 30, 1L << 30, 16}) {
            b.putLong(d);
        }
        return b.putLong(0).array();
    }

    @Test
    void badInput_clear4xx_bufferUnchanged() throws Exception {
        start(1);
        String u = urls.get(0);
        assertRefused(404, "not_found", send("POST", u + "/0/update", Tuples.encode(samples(0, 1))));
        assertRefused(400, "bad_request", send("PUT", u, "{\"classes\": 0, \"perClass\": 1, \"candidates\": 0, \"batch\": 1}"
                .getBytes()));
        send("PUT", u, CONFIG.getBytes());
        assertRefused(409, "conflict", send("PUT", u, CONFIG.replace("\"seed\": 9", "\"seed\": 8").getBytes()));
        assertRefused(400, "bad_request", send("POST", u + "/0/update", new byte[] {5, 0, 0, 0, 1}));
        assertRefused(400, "bad_request", send("POST", u + "/0/update", Tuples.encode(List.of(
                Tuples.bytesSample(2, new byte[1])))));
        assertRefused(400, "bad_request", send("POST", u + "/0/update", overflowingShape()));
        assertRefused(400, "bad_request", send("POST", u + "/x/update", Tuples.encode(samples(0, 1))));
        assertRefused(400, "bad_request", send("GET", u + "/0/sample?r=0", null));
        assertRefused(400, "bad_request", send("POST", u + "/0/update?draw=x", Tuples.encode(samples(0, 1))));
        assertRefused(400, "bad_request", send("GET", u + "/0/sample?r=3&scope=everywhere", null));
        assertRefused(400, "bad_request", send("POST", u + "/fetch", new byte[] {(byte) 0xff, (byte) 0xff, 0, 0}));
        assertRefused(400, "bad_request", send("POST", u + "/repartition", "{\"ranks\": {}}".getBytes()));
        assertRefused(404, "not_found", send("GET", u + "/0/nothing", null));
        assertEquals(0, RehearsalJson.read(send("GET", u, null).body()).get("representatives").asInt());
    }

    @Test
    void peerAnswers_overTheirLimitsOrMalformed_failTheCall() throws Exception {
        HttpServer liar = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        liar.createContext("/", ex -> {
            boolean counts = ex.getRequestURI().getPath().endsWith("/counts");
            byte[] body = counts ? "{\"daemon\": \"x\", \"config\": null, \"ranks\": {\"0\": [1]}}".getBytes()
                    : new byte[] {1, 0, 0, 0};
            ex.sendResponseHeaders(200, counts ? body.length : HttpRehearsalPeers.MAX_BATCH * 2);
            ex.getResponseBody().write(body);
            ex.close();
        });
        liar.start();
        servers.closeLater(() -> liar.stop(0));
        HttpRehearsalPeers peers = new HttpRehearsalPeers(link);
        String at = "127.0.0.1:" + liar.getAddress().getPort();
        assertTrue(assertThrows(ExecutionException.class, () -> peers.counts(at, "j").get()).getCause().getMessage()
                .contains("bad rehearsal counts"));
        assertTrue(assertThrows(ExecutionException.class, () -> peers.fetch(at, "j", List.of(
                new io.tenplex.datasets.rehearsal.RehearsalPeers.Slot(0, 0, 0))).get()).getCause().getMessage()
                .contains("over the limit"));
    }
}
