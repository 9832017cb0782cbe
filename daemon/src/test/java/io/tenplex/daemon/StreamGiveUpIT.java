package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
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
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Clients that give up on a stream (their connection closes while their request waits), with two
 * real daemons: A relays to B, which holds the only rank. Readers that give up on A take no samples
 * with them (A cancels its relayed read, B withdraws it), and producers that give up on A or B are not
 * stored later: with FIFO and FIRO every sample is read exactly once once the clients come back and a
 * producer pushes its sample again.
 */
class StreamGiveUpIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long DEADLINE_MS = 15_000; // less than the 30 s the given-up requests would wait
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<DaemonProcess> daemons = new ArrayList<>();
    private final List<Socket> sockets = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Socket s : sockets) {
            s.close();
        }
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    @Test
    void readersThatGiveUpOnARelayingDaemon_leaveEverySampleToBeReadExactlyOnce() throws Exception {
        start();
        DaemonProcess a = daemons.get(0);
        DaemonProcess b = daemons.get(1);
        for (String policy : List.of("fifo", "firo")) {
            String j = "/api/v1/jobs/gu-" + policy + "/streams";
            create(a, j, policy, 64, b, a);
            List<Socket> readers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                readers.add(send(a, "GET " + j + "/ranks/0/batch?size=10&wait=30000", new byte[0]));
            }
            await(b, j, r -> r.path("waiting_readers").asInt() == 4, "4 relayed readers wait at B");
            for (Socket s : readers) {
                reset(s); // the readers die
            }
            await(b, j, r -> r.path("waiting_readers").asInt() == 0 && r.path("withdrawn").asInt() == 4,
                    "B withdrew the relayed reads of the readers that went away");
            for (int i = 0; i < 40; i++) {
                assertEquals(200, call(i % 2 == 0 ? a : b, "POST", j + "/samples", ("s" + i).getBytes()).statusCode());
            }
            Map<String, Integer> read = readAll(a, j, 40);
            assertEquals(40, read.size(), policy + ": " + read);
            read.forEach((s, n) -> assertEquals(1, n, policy + ": " + s + " read " + n + " times"));
        }
    }

    @Test
    void producersThatGiveUpWhileWaiting_areNotStoredLater_soARetryIsReadOnce() throws Exception {
        start();
        DaemonProcess a = daemons.get(0);
        DaemonProcess b = daemons.get(1);
        for (String policy : List.of("fifo", "firo")) {
            String j = "/api/v1/jobs/gp-" + policy + "/streams";
            create(a, j, policy, 2, b, a);
            for (int i = 0; i < 2; i++) {
                assertEquals(200, call(b, "POST", j + "/samples", ("s" + i).getBytes()).statusCode());
            }
            Socket viaA = send(a, "POST " + j + "/samples?wait=30000", "late-a".getBytes());
            Socket atB = send(b, "POST " + j + "/samples?wait=30000", "late-b".getBytes());
            await(b, j, r -> r.path("waiting_producers").asInt() == 2, "2 pushes wait at B (one relayed by A)");
            reset(viaA);
            reset(atB);
            await(b, j, r -> r.path("waiting_producers").asInt() == 0 && r.path("withdrawn").asInt() == 2,
                    "B withdrew the pushes whose producers went away");
            List<CompletableFuture<HttpResponse<byte[]>>> retries = new ArrayList<>();
            for (String[] p : new String[][] {{"late-a", "a"}, {"late-b", "b"}}) {
                DaemonProcess d = p[1].equals("a") ? a : b;
                retries.add(http.sendAsync(request(d, "POST", j + "/samples?wait=20000", p[0].getBytes()),
                        HttpResponse.BodyHandlers.ofByteArray()));
            }
            await(b, j, r -> r.path("waiting_producers").asInt() == 2, "the retried pushes wait");
            Map<String, Integer> read = readAll(a, j, 4);
            for (CompletableFuture<HttpResponse<byte[]>> r : retries) {
                assertEquals(200, r.get().statusCode(), new String(r.get().body(), StandardCharsets.UTF_8));
            }
            assertEquals(200, call(a, "POST", j + "/end", new byte[0]).statusCode());
            ByteBuffer last = ByteBuffer.wrap(call(a, "GET", j + "/ranks/0/batch?size=1&wait=5000", new byte[0]).body());
            assertEquals(0, last.getInt(), policy + ": nothing left after " + read);
            assertEquals(1, last.getInt(), "ended");
            assertEquals(Map.of("s0", 1, "s1", 1, "late-a", 1, "late-b", 1), read, policy);
        }
    }

    /** Daemons A and B that know each other (--peers). */
    private void start() throws Exception {
        List<ServerSocket> held = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            held.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
        }
        List<Integer> ports = held.stream().map(ServerSocket::getLocalPort).toList();
        for (ServerSocket s : held) {
            s.close();
        }
        String peers = "0=127.0.0.1:" + ports.get(0) + ",1=127.0.0.1:" + ports.get(1);
        for (int i = 0; i < 2; i++) {
            daemons.add(DaemonProcess.start("--port", ports.get(i).toString(), "--bind", "127.0.0.1", "--memory-limit",
                    "64m", "--peers", peers));
        }
    }

    /** A stream whose one rank is on {@code holder}, with {@code relay} a daemon that relays to it. */
    private void create(DaemonProcess at, String j, String policy, int capacity, DaemonProcess holder,
            DaemonProcess relay) throws Exception {
        HttpResponse<byte[]> r = call(at, "POST", j, ("{\"policy\": \"" + policy + "\", \"capacity\": " + capacity
                + ", \"threshold\": 0, \"ranks\": [\"" + addr(holder) + "\"], \"daemons\": [\"" + addr(relay) + "\"]}")
                .getBytes());
        assertEquals(201, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
    }

    /** Reads batches of 1 through {@code d} until {@code n} samples came; each sample's text and how often it came. */
    private Map<String, Integer> readAll(DaemonProcess d, String j, int n) throws Exception {
        Map<String, Integer> read = new TreeMap<>();
        long end = System.currentTimeMillis() + DEADLINE_MS;
        int got = 0;
        while (got < n) {
            if (System.currentTimeMillis() > end) {
                fail("only " + got + " of " + n + " samples came: " + read);
            }
            ByteBuffer batch = ByteBuffer.wrap(call(d, "GET", j + "/ranks/0/batch?size=1&wait=1000", new byte[0]).body());
            int count = batch.getInt();
            batch.getInt();
            for (int i = 0; i < count; i++) {
                byte[] s = new byte[batch.getInt()];
                batch.get(s);
                read.merge(new String(s, StandardCharsets.UTF_8), 1, Integer::sum);
                got++;
            }
        }
        return read;
    }

    /** Polls {@code d}'s status of rank 0 until {@code ok} holds, for at most {@link #DEADLINE_MS}. */
    private void await(DaemonProcess d, String j, Predicate<JsonNode> ok, String what) throws Exception {
        long end = System.currentTimeMillis() + DEADLINE_MS;
        JsonNode rank = null;
        while (System.currentTimeMillis() < end) {
            rank = JSON.readTree(call(d, "GET", j, new byte[0]).body()).path("local").path(0);
            if (ok.test(rank)) {
                return;
            }
            Thread.onSpinWait();
        }
        fail(what + ": not within " + DEADLINE_MS + " ms; rank 0 at " + addr(d) + ": " + rank);
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

    private HttpRequest request(DaemonProcess d, String method, String path, byte[] body) {
        return HttpRequest.newBuilder(URI.create("http://" + addr(d) + path))
                .header("Content-Type", body.length > 0 && body[0] == '{' ? "application/json" : "application/octet-stream")
                .method(method, HttpRequest.BodyPublishers.ofByteArray(body)).build();
    }

    private HttpResponse<byte[]> call(DaemonProcess d, String method, String path, byte[] body) throws Exception {
        return http.send(request(d, method, path, body), HttpResponse.BodyHandlers.ofByteArray());
    }
}
