package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A re-partition's peer steps against a hostile or racing client, over real HTTP between REST servers:
 * out-of-order phases change nothing, updates racing a re-partition are never answered and then lost,
 * and the addresses a re-partition calls are limited to the peers and allowed hosts.
 */
class RehearsalRepartitionSafetyTest {
    private static final String CONFIG = "{\"classes\": 2, \"perClass\": 100000, \"candidates\": 1, \"batch\": 1}";
    private final RehearsalServers servers = new RehearsalServers();
    private final List<String> addresses = servers.addresses;
    private final List<RehearsalService> services = servers.services;
    private final List<String> urls = servers.urls;

    @AfterEach
    void close() throws Exception {
        servers.close();
    }

    private void start(int n) throws Exception {
        int first = urls.size();
        servers.start(n, 1 << 28);
        for (int i = first; i < urls.size(); i++) {
            assertEquals(201, send("PUT", urls.get(i), CONFIG).statusCode());
        }
    }

    private HttpResponse<byte[]> send(String method, String url, Object body) throws Exception {
        return servers.send(method, url, body instanceof String s ? s.getBytes() : (byte[]) body);
    }

    private static void assertAnswer(int status, String code, HttpResponse<byte[]> r) {
        assertEquals(status, r.statusCode(), new String(r.body()));
        assertEquals(code, r.headers().firstValue("X-Tenplex-Error-Code").orElse(""));
    }

    private static Sample sample(int cls, int id) {
        return Tuples.bytesSample(cls, new byte[] {(byte) (id >> 16), (byte) (id >> 8), (byte) id});
    }

    private static int id(Sample s) {
        byte[] t = s.tuple();
        return (t[t.length - 3] & 0xff) << 16 | (t[t.length - 2] & 0xff) << 8 | (t[t.length - 1] & 0xff);
    }

    private long representatives(int daemon) throws Exception {
        return RehearsalJson.read(send("GET", urls.get(daemon), null).body()).get("representatives").asLong();
    }

    private Set<Integer> held(int daemon, int rank) throws Exception {
        Set<Integer> ids = new HashSet<>();
        HttpResponse<byte[]> r = send("GET", urls.get(daemon) + "/" + rank + "/sample?r=65536&scope=local", null);
        Tuples.decode(r.body(), 1 << 16, 1 << 10).forEach(s -> ids.add(id(s)));
        return ids;
    }

    private void seed(int daemon, int rank, int from, int n) throws Exception {
        List<Sample> s = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            s.add(sample(i % 2, from + i));
        }
        assertEquals(200, send("POST", urls.get(daemon) + "/" + rank + "/update", Tuples.encode(s)).statusCode());
    }

    @Test
    void commit_withNothingPrepared_afterARefusedPrepare_orTwice_changesNothing() throws Exception {
        start(1);
        String u = urls.get(0);
        seed(0, 0, 0, 10);
        assertAnswer(409, "conflict", send("POST", u + "/commit", null));
        assertEquals(10, representatives(0), "a commit with nothing prepared keeps every representative");
        String id = RehearsalJson.read(send("GET", u, null).body()).get("daemon").asText();
        String daemons = "\"daemons\": [{\"id\": \"" + id + "\", \"address\": \"" + addresses.get(0) + "\"}]";
        String cfg = "\"config\": " + CONFIG;
        assertAnswer(400, "bad_request", send("POST", u + "/prepare", "{" + cfg + ", \"daemons\": [], "
                + "\"ranks\": {\"0\": [[0, -1, -1, -1]]}}"));
        assertAnswer(409, "conflict", send("POST", u + "/prepare", "{" + cfg + ", " + daemons
                + ", \"ranks\": {\"0\": [[0, 0, 0, 99]]}}"));
        assertAnswer(409, "conflict", send("POST", u + "/commit", null));
        assertAnswer(200, "", send("POST", u + "/abort", null));
        assertEquals(10, representatives(0), "refused prepares, a commit and an abort later: nothing changed");
        String moves = "{" + cfg + ", " + daemons + ", \"ranks\": {\"0\": [[0, 0, 0, 0], [0, 0, 1, 0]]}}";
        assertAnswer(200, "", send("POST", u + "/prepare", moves));
        assertAnswer(200, "", send("POST", u + "/prepare", moves));
        assertAnswer(409, "conflict", send("POST", u + "/prepare", moves.replace("[0, 0, 1, 0]", "[0, 0, 1, 1]")));
        HttpResponse<byte[]> held = send("POST", u + "/0/update", Tuples.encode(List.of(sample(0, 77))));
        assertAnswer(429, "too_many_requests", held);
        assertEquals("1", held.headers().firstValue("Retry-After").orElse(""));
        assertEquals(10, representatives(0), "prepared, not committed: nothing changed yet");
        assertAnswer(200, "", send("POST", u + "/commit", null));
        assertEquals(2, representatives(0));
        assertAnswer(200, "", send("POST", u + "/commit", null));
        assertAnswer(200, "", send("POST", u + "/prepare", moves));
        assertAnswer(200, "", send("POST", u + "/commit", null));
        assertEquals(2, representatives(0), "identical repeats of committed steps: no-ops");
        assertEquals(200, send("POST", u + "/0/update", Tuples.encode(List.of(sample(0, 78)))).statusCode());
    }

    @Test
    void updates_racingRepartitionsFromTwoRanksToOne_everyAcceptedOneIsKept() throws Exception {
        start(2);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger retried = new AtomicInteger();
        List<Integer> accepted = new CopyOnWriteArrayList<>();
        List<Integer> unexpected = new CopyOnWriteArrayList<>();
        CountDownLatch running = new CountDownLatch(1);
        Thread updater = new Thread(() -> {
            try {
                for (int k = 100_000; !stop.get(); k++) {
                    int status = send("POST", urls.get(0) + "/0/update", Tuples.encode(List.of(sample(0, k))))
                            .statusCode();
                    if (status == 200) {
                        accepted.add(k);
                        running.countDown();
                    } else if (status == 429) {
                        retried.incrementAndGet();
                    } else {
                        unexpected.add(status);
                    }
                }
            } catch (Exception e) {
                unexpected.add(-1);
                running.countDown();
            }
        });
        updater.start();
        running.await();
        String two = "{\"ranks\": {\"0\": \"" + addresses.get(0) + "\", \"1\": \"" + addresses.get(1) + "\"}}";
        String one = "{\"ranks\": {\"0\": \"" + addresses.get(0) + "\"}}";
        for (int i = 0; i < 200 && (i < 6 || retried.get() == 0); i++) {
            assertEquals(200, send("POST", urls.get(1) + "/repartition", i % 2 == 0 ? two : one).statusCode());
        }
        stop.set(true);
        updater.join();
        assertEquals(List.of(), unexpected, "update answers other than 200 and 429");
        Set<Integer> held = held(0, 0);
        List<Integer> lost = accepted.stream().filter(k -> !held.contains(k)).toList();
        assertEquals(List.of(), lost, accepted.size() + " updates answered 200, " + retried + " answered 429");
        assertTrue(retried.get() > 0, "some updates raced a re-partition");
        assertEquals(200, send("POST", urls.get(0) + "/0/update", Tuples.encode(List.of(sample(1, 1)))).statusCode());
    }

    @Test
    void repartition_callsOnlyPeersAndAllowedHosts_aFailingPeerIs502() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        HttpServer outsider = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        outsider.createContext("/", ex -> {
            calls.incrementAndGet();
            ex.sendResponseHeaders(500, -1);
            ex.close();
        });
        outsider.start();
        servers.closeLater(() -> outsider.stop(0));
        String there = "127.0.0.1:" + outsider.getAddress().getPort();
        start(2);
        seed(0, 0, 0, 6);
        HttpResponse<byte[]> r = send("POST", urls.get(0) + "/repartition", "{\"ranks\": {\"0\": \"" + there + "\"}}");
        assertAnswer(403, "forbidden", r);
        assertTrue(new String(r.body()).contains(there), new String(r.body()));
        String id = RehearsalJson.read(send("GET", urls.get(1), null).body()).get("daemon").asText();
        assertAnswer(403, "forbidden", send("POST", urls.get(1) + "/prepare", "{\"config\": " + CONFIG
                + ", \"daemons\": [{\"id\": \"x\", \"address\": \"" + there + "\"}, {\"id\": \"" + id + "\", "
                + "\"address\": \"" + addresses.get(1) + "\"}], \"ranks\": {\"1\": [[0, 0, 0, 0]]}}"));
        assertAnswer(400, "bad_request", send("POST", urls.get(0) + "/repartition",
                "{\"ranks\": {\"0\": \"127.0.0.1:notaport\"}}"));
        assertEquals(0, calls.get(), "nothing was sent to an address outside the peers");
        services.get(0).setAllowedHosts((host, port) -> host.equals("127.0.0.1") && port == outsider.getAddress()
                .getPort());
        assertAnswer(502, "bad_gateway", send("POST", urls.get(0) + "/repartition", "{\"ranks\": {\"0\": \""
                + addresses.get(0) + "\", \"1\": \"" + there + "\"}}"));
        assertTrue(calls.get() > 0, "an allowed host is called");
        assertEquals(6, representatives(0), "nothing changed");
        assertEquals(200, send("POST", urls.get(0) + "/0/update", Tuples.encode(List.of(sample(0, 9)))).statusCode(),
                "a failed re-partition lets updates in again");
    }
}
