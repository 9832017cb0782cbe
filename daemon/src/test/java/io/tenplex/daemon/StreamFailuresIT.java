package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Streams when things go wrong, with real daemon processes: a re-partition that fails at a new
 * daemon after the samples left their buffers puts every one back; addresses a daemon does not
 * know are refused; a reader that goes away while it waits does not take samples with it.
 */
class StreamFailuresIT {
    private static final String J = "/api/v1/jobs/sf/streams";
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<DaemonProcess> daemons = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    private static String addr(DaemonProcess d) {
        return "127.0.0.1:" + d.address().getPort();
    }

    private HttpResponse<byte[]> call(DaemonProcess d, String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://" + addr(d) + path))
                .header("Content-Type", body.startsWith("{") ? "application/json" : "application/octet-stream")
                .method(method, HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private JsonNode local(DaemonProcess d) throws Exception {
        return JSON.readTree(call(d, "GET", J, "").body()).path("local");
    }

    /** Daemons A and B know each other (--peers) and C (an allowed host:port); C wants a token. */
    private void start() throws Exception {
        List<ServerSocket> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
        }
        List<Integer> ports = held.stream().map(ServerSocket::getLocalPort).toList();
        for (ServerSocket s : held) {
            s.close();
        }
        String peers = "0=127.0.0.1:" + ports.get(0) + ",1=127.0.0.1:" + ports.get(1);
        for (int i = 0; i < 2; i++) {
            daemons.add(DaemonProcess.start("--port", ports.get(i).toString(), "--bind", "127.0.0.1", "--memory-limit",
                    "64m", "--peers", peers, "--allow-source-host", "127.0.0.1:" + ports.get(2)));
        }
        daemons.add(DaemonProcess.start("--port", ports.get(2).toString(), "--bind", "127.0.0.1", "--memory-limit",
                "64m", "--token", "not-the-others-token"));
    }

    @Test
    void repartition_failingAtANewDaemon_putsEverySampleBack_andUnknownAddressesAreRefused() throws Exception {
        start();
        DaemonProcess a = daemons.get(0);
        DaemonProcess b = daemons.get(1);
        String ranks = "[\"" + addr(a) + "\", \"" + addr(b) + "\"]";
        assertEquals(403, call(a, "POST", J, "{\"policy\": \"fifo\", \"capacity\": 50, \"ranks\": [\"" + addr(a)
                + "\", \"127.0.0.1:1\"]}").statusCode());
        assertEquals(400, call(a, "POST", J, "{\"policy\": \"fifo\", \"capacity\": 10.7}").statusCode());
        assertEquals(201, call(a, "POST", J, "{\"policy\": \"fifo\", \"capacity\": 50, \"ranks\": " + ranks + "}")
                .statusCode());
        for (int i = 0; i < 20; i++) {
            assertEquals(200, call(a, "POST", J + "/samples?rank=" + (i % 2), "sample-" + i).statusCode());
        }
        assertEquals(403, call(a, "POST", J + "/partition", "{\"ranks\": [\"127.0.0.1:1\"]}").statusCode());
        HttpResponse<byte[]> failed = call(a, "POST", J + "/partition", "{\"ranks\": [\"" + addr(daemons.get(2))
                + "\"]}");
        String why = new String(failed.body(), StandardCharsets.UTF_8);
        assertEquals(502, failed.statusCode(), why);
        assertTrue(why.contains("restored"), why);
        for (DaemonProcess d : List.of(a, b)) {
            JsonNode rank = local(d).get(0);
            assertEquals(10, rank.path("population").asInt(), rank.toString());
            assertTrue(!rank.path("frozen").asBoolean(), rank.toString());
        }
        assertEquals(200, call(b, "POST", J + "/samples", "one more").statusCode());
        assertEquals(200, call(a, "POST", J + "/partition", "{\"ranks\": [\"" + addr(b) + "\"]}").statusCode());
        assertEquals(21, local(b).get(0).path("population").asInt());
    }

    @Test
    void aReaderThatGoesAwayWhileWaiting_leavesItsSamplesForTheNext() throws Exception {
        daemons.add(DaemonProcess.start("--port", "0", "--bind", "127.0.0.1", "--memory-limit", "64m"));
        DaemonProcess d = daemons.get(0);
        assertEquals(201, call(d, "POST", J, "{\"policy\": \"fifo\", \"capacity\": 10}").statusCode());
        try (Socket s = new Socket("127.0.0.1", d.address().getPort())) {
            OutputStream out = s.getOutputStream();
            out.write(("GET " + J + "/ranks/0/batch?size=3&wait=20000 HTTP/1.1\r\nHost: x\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            while (local(d).get(0).path("waiting_readers").asInt() == 0) {
                Thread.onSpinWait(); // until the read waits
            }
            s.setSoLinger(true, 0); // the reader dies: its connection is reset
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(200, call(d, "POST", J + "/samples", "s" + i).statusCode());
        }
        byte[] batch = call(d, "GET", J + "/ranks/0/batch?size=3&wait=10000", "").body();
        assertEquals(3, java.nio.ByteBuffer.wrap(batch).getInt());
        assertEquals(3, local(d).get(0).path("delivered").asInt());
    }
}
