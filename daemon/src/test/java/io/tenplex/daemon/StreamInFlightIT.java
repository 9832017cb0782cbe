package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Clients that give up at the worst moment, with two real daemons: A relays to B, which holds the
 * only rank, through a {@link HoldingProxy} that holds B's answer after B wrote it (B counts it as
 * delivered) until the client at A has gone and A has reacted. A reader's batch taken at B is then
 * read later exactly once, and a producer's push stored at B is stored once when its producer
 * retries with the same sample id.
 */
class StreamInFlightIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long DEADLINE_MS = 15_000;
    private static final InetAddress PROXY_HOST = loopback2();
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<DaemonProcess> daemons = new ArrayList<>();
    private final List<Socket> sockets = new ArrayList<>();
    private HoldingProxy proxy;
    private DaemonProcess a;
    private DaemonProcess b;

    @BeforeEach
    void start() throws Exception {
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(2);
        for (int i = 0; i < 2; i++) {
            daemons.add(DaemonProcess.start("--port", peers.port(i), "--bind", "127.0.0.1", "--memory-limit", "64m",
                    "--peers", peers.arg(), "--allow-source-host", PROXY_HOST.getHostAddress()));
        }
        a = daemons.get(0);
        b = daemons.get(1);
        // B's port on another loopback address: B holds the rank named by it, A reaches B through the proxy
        proxy = new HoldingProxy(PROXY_HOST, b.address().getPort(), new InetSocketAddress("127.0.0.1",
                b.address().getPort()));
    }

    @AfterEach
    void stop() throws Exception {
        for (Socket s : sockets) {
            s.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    @Test
    void readerThatGivesUpWhileItsRelayedBatchIsOnItsWay_losesNoSample() throws Exception {
        String j = create("in-flight-read", 8);
        Socket reader = send(a, "GET " + j + "/ranks/0/batch?size=2&wait=30000", new byte[0]);
        await(j, r -> r.path("waiting_readers").asInt() == 1, "the relayed read waits at B");
        proxy.holdNextAnswer();
        for (int i = 0; i < 3; i++) {
            assertEquals(200, call(b, "POST", j + "/samples", ("s" + i).getBytes()).statusCode());
        }
        assertTrue(proxy.held.await(DEADLINE_MS, TimeUnit.MILLISECONDS), "B answered the relayed read");
        reset(reader); // the reader dies while its batch is between B and A
        assertTrue(proxy.reacted.await(DEADLINE_MS, TimeUnit.MILLISECONDS), "A reacted to the reader's close");
        proxy.release();
        // A sends the batch back to B; the stream ends only once it is there (an end racing a batch on its
        // way back is a window of its own, docs/STREAMS.md)
        await(j, r -> r.path("population").asInt() == 3, "the batch its reader left is back in B's buffer");
        assertEquals(200, call(a, "POST", j + "/end", new byte[0]).statusCode());
        assertEquals(Map.of("s0", 1, "s1", 1, "s2", 1), readToEnd(j), "every sample read exactly once");
    }

    @Test
    void producerThatGivesUpWhileItsRelayedPushIsStored_isStoredOnceWhenItRetriesWithTheSameId() throws Exception {
        String j = create("in-flight-push", 1);
        assertEquals(200, call(b, "POST", j + "/samples?id=p-0", "first".getBytes()).statusCode());
        Socket producer = send(a, "POST " + j + "/samples?wait=30000&id=p-1", "late".getBytes());
        await(j, r -> r.path("waiting_producers").asInt() == 1, "the relayed push waits at B");
        proxy.holdNextAnswer();
        Map<String, Integer> read = new TreeMap<>(readBatch(b, j, 1)); // room: B stores the waiting push
        assertTrue(proxy.held.await(DEADLINE_MS, TimeUnit.MILLISECONDS), "B answered the relayed push");
        reset(producer); // the producer dies not knowing that its sample was stored
        assertTrue(proxy.reacted.await(DEADLINE_MS, TimeUnit.MILLISECONDS), "A reacted to the producer's close");
        proxy.release();
        HttpResponse<byte[]> retry = call(a, "POST", j + "/samples?wait=2000&id=p-1", "late".getBytes());
        assertEquals(200, retry.statusCode(), new String(retry.body(), StandardCharsets.UTF_8));
        assertEquals("duplicate", JSON.readTree(retry.body()).path("outcome").asText());
        assertEquals(200, call(a, "POST", j + "/end", new byte[0]).statusCode());
        readToEnd(j).forEach((s, n) -> read.merge(s, n, Integer::sum));
        assertEquals(Map.of("first", 1, "late", 1), read, "the retried sample stored once");
    }

    /** A FIFO stream whose one rank is B, named by the proxy's address, created at A (which relays). */
    private String create(String job, int capacity) throws Exception {
        String j = "/api/v1/jobs/" + job + "/streams";
        String rank = PROXY_HOST.getHostAddress() + ":" + b.address().getPort();
        HttpResponse<byte[]> r = call(a, "POST", j, ("{\"policy\": \"fifo\", \"capacity\": " + capacity
                + ", \"threshold\": 0, \"ranks\": [\"" + rank + "\"], \"daemons\": [\"" + addr(a) + "\"]}").getBytes());
        assertEquals(201, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return j;
    }

    /** Reads through A until the stream has ended for rank 0; each sample's text and how often it came. */
    private Map<String, Integer> readToEnd(String j) throws Exception {
        Map<String, Integer> read = new TreeMap<>();
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (System.currentTimeMillis() < end) {
            ByteBuffer batch = ByteBuffer.wrap(call(a, "GET", j + "/ranks/0/batch?size=2&wait=1000", new byte[0]).body());
            int count = batch.getInt();
            boolean ended = batch.getInt() == 1;
            for (int i = 0; i < count; i++) {
                byte[] s = new byte[batch.getInt()];
                batch.get(s);
                read.merge(new String(s, StandardCharsets.UTF_8), 1, Integer::sum);
            }
            if (ended) {
                return read;
            }
        }
        throw new AssertionError("the stream did not end within " + DEADLINE_MS + " ms; read " + read);
    }

    private Map<String, Integer> readBatch(DaemonProcess d, String j, int size) throws Exception {
        ByteBuffer batch = ByteBuffer.wrap(call(d, "GET", j + "/ranks/0/batch?size=" + size + "&wait=5000",
                new byte[0]).body());
        Map<String, Integer> read = new TreeMap<>();
        int count = batch.getInt();
        batch.getInt();
        for (int i = 0; i < count; i++) {
            byte[] s = new byte[batch.getInt()];
            batch.get(s);
            read.merge(new String(s, StandardCharsets.UTF_8), 1, Integer::sum);
        }
        assertEquals(size, count, "a batch of " + size + " at " + addr(d));
        return read;
    }

    /** Polls B's status of rank 0 until {@code ok} holds, for at most {@link #DEADLINE_MS}. */
    private void await(String j, Predicate<JsonNode> ok, String what) throws Exception {
        long end = System.currentTimeMillis() + DEADLINE_MS;
        JsonNode rank = null;
        while (System.currentTimeMillis() < end) {
            rank = JSON.readTree(call(b, "GET", j, new byte[0]).body()).path("local").path(0);
            if (ok.test(rank)) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError(what + ": not within " + DEADLINE_MS + " ms; rank 0 at B: " + rank);
    }

    /** Sends a raw HTTP/1.1 request and leaves its connection open (the client waits for the answer). */
    private Socket send(DaemonProcess d, String line, byte[] body) throws Exception {
        Socket s = new Socket("127.0.0.1", d.address().getPort());
        sockets.add(s);
        OutputStream out = s.getOutputStream();
        out.write((line + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: "
                + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        return s;
    }

    /** The client gives up: its connection is reset. */
    private static void reset(Socket s) throws Exception {
        s.setSoLinger(true, 0);
        s.close();
    }

    private static String addr(DaemonProcess d) {
        return "127.0.0.1:" + d.address().getPort();
    }

    private static InetAddress loopback2() {
        try {
            return InetAddress.getByName("127.0.0.2");
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private HttpResponse<byte[]> call(DaemonProcess d, String method, String path, byte[] body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://" + addr(d) + path))
                .header("Content-Type", body.length > 0 && body[0] == '{' ? "application/json" : "application/octet-stream")
                .method(method, HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }
}
