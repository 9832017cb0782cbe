package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.JobService;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.control.PartStatus;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Failures in real transfers between real daemon processes on loopback: a destination daemon
 * killed by its PID while its part is executing, and bytes damaged on the wire. The faults come
 * from {@link FaultProxy} between the daemons; nothing inside them is replaced.
 */
class PeerFailureIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private final Model model = MegatronLayout.model(GPT);
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final List<DaemonProcess> daemons = new ArrayList<>();
    private final List<FaultProxy> proxies = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        proxies.forEach(FaultProxy::close);
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    private DaemonProcess start() throws Exception {
        DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "128m");
        daemons.add(d);
        return d;
    }

    private FaultProxy proxy(DaemonProcess d, FaultProxy.Mode mode) throws Exception {
        FaultProxy p = new FaultProxy(d.address(), mode);
        proxies.add(p);
        return p;
    }

    private HttpResponse<byte[]> send(HttpRequest.Builder r) throws Exception {
        return http.send(r.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Uploads every shard of {@code from} (and its values) to the daemon of the holding worker, as training would. */
    private Map<String, byte[]> save(List<DaemonProcess> workers, Ptc from) throws Exception {
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, 11);
        var shards = ReferenceInterpreter.shard(from, full);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            String base = workers.get(from.device(rank).worker()).url();
            for (Ptc.Shard s : from.shards(rank)) {
                var b = shards.get(rank).get(s.key());
                String dims = String.join(",", Arrays.stream(s.shape().dims()).mapToObj(Long::toString).toList());
                HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(base + "/api/v1/tensors/job/j/save/" + rank
                        + "/" + s.key() + "?dtype=" + s.spec().dtype().wireName() + "&dims=" + dims))
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(b.data())));
                assertEquals(201, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
            }
            for (ValueSpec v : model.values()) {
                send(HttpRequest.newBuilder(URI.create(base + "/api/v1/files/job/j/save/" + rank + "/" + v.key()))
                        .PUT(HttpRequest.BodyPublishers.ofString(v.key() + " of rank " + rank)));
            }
        }
        return full;
    }

    private static String config(ParallelConfig c, int perWorker, int firstWorker) {
        return "{\"tp\": " + c.tp() + ", \"pp\": " + c.pp() + ", \"dp\": " + c.dp() + ", \"devicesPerWorker\": " + perWorker
                + ", \"firstWorker\": " + firstWorker + "}";
    }

    /** Posts a reconfiguration to worker 0's daemon; returns its status URL. */
    private String reconfigure(String from, String to, Map<Integer, InetSocketAddress> addrs, long step) throws Exception {
        StringBuilder d = new StringBuilder("{");
        addrs.forEach((w, a) -> d.append(d.length() > 1 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:")
                .append(a.getPort()).append('"'));
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + from + ", \"to\": " + to
                + ", \"daemons\": " + d + "}, \"step\": " + step + "}";
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(daemons.get(0).url() + JobService.PREFIX
                + "j/reconfigure")).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertEquals(202, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return json.readTree(r.body()).get("status").asText();
    }

    private JsonNode await(String status) throws Exception {
        return json.readTree(send(HttpRequest.newBuilder(URI.create(daemons.get(0).url() + status + "?wait=true"))).body());
    }

    private byte[] get(DaemonProcess d, String path) throws Exception {
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(URI.create(d.url() + path)));
        assertEquals(200, r.statusCode(), path + ": " + new String(r.body(), StandardCharsets.UTF_8));
        return r.body();
    }

    /**
     * Every shard of {@code to} (packed from worker 0) under /job/j/load on the daemon of its worker
     * shifted by {@code firstWorker}, byte for byte.
     */
    private void assertLoaded(List<DaemonProcess> workers, Ptc to, int firstWorker, Map<String, byte[]> full)
            throws Exception {
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            DaemonProcess d = workers.get(to.device(rank).worker() + firstWorker);
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), get(d, "/api/v1/tensors/job/j/load/" + rank + "/" + e.getKey()),
                        "rank " + rank + " " + e.getKey());
            }
        }
    }

    private static Map<Integer, InetSocketAddress> addresses(InetSocketAddress... a) {
        Map<Integer, InetSocketAddress> m = new LinkedHashMap<>();
        for (int w = 0; w < a.length; w++) {
            m.put(w, a[w]);
        }
        return m;
    }

    @Test
    void peerKilledDuringExecution_aborts_keepsThePreviousGeneration_andARetryAfterRestartSucceeds() throws Exception {
        DaemonProcess w0 = start();
        DaemonProcess w1 = start();
        DaemonProcess w2 = start();
        ParallelConfig a = ParallelConfig.of(2, 2, 1);
        Ptc from = Ptc.packed(model, a, 2); // stage 0 on worker 0, stage 1 on worker 1
        Map<String, byte[]> full = save(List.of(w0, w1), from);
        // a first, committed generation: (2,1,2) on workers 0 and 1
        ParallelConfig mid = ParallelConfig.of(2, 1, 2);
        JsonNode first = await(reconfigure(config(a, 2, 0), config(mid, 2, 0), addresses(w0.address(), w1.address(),
                w2.address()), 10));
        assertEquals("committed", first.get("state").asText(), first.toString());
        String probe = "/api/v1/tensors/job/j/load/2/language_model.encoder.layers.3.mlp.dense_h_to_4h.weight";
        byte[] before = get(w1, probe);
        // redeploy to workers 1 and 2: worker 2 reads stage 1 from worker 1 through a proxy that holds the read
        FaultProxy hold = proxy(w1, FaultProxy.Mode.HOLD);
        String status = reconfigure(config(a, 2, 0), config(a, 2, 1), addresses(w0.address(),
                new InetSocketAddress("127.0.0.1", hold.port()), w2.address()), 20);
        assertTrue(hold.held.await(60, TimeUnit.SECONDS), "worker 2 never started a transfer");
        String plan = status.substring(status.lastIndexOf('/') + 1);
        PartStatus part = PartStatus.parseFrom(get(w2, JobService.PREFIX + "j/parts/" + plan));
        assertEquals("executing", part.getState()); // the held read cannot have finished
        assertTrue(part.getBytesDone() < part.getBytesTotal(), part.toString());
        assertEquals(137, w2.signal("KILL")); // 128 + SIGKILL
        JsonNode aborted = await(status);
        assertEquals("aborted", aborted.get("state").asText(), aborted.toString());
        assertTrue(aborted.get("error").asText().contains("worker 2"), aborted.toString());
        // the previous generation is intact on the survivors, and nothing is left staged
        assertArrayEquals(before, get(w1, probe));
        assertEquals("10", new String(get(w1, "/api/v1/files/job/j/iter"), StandardCharsets.US_ASCII));
        for (DaemonProcess d : List.of(w0, w1)) {
            HttpResponse<byte[]> staging = send(HttpRequest.newBuilder(URI.create(d.url() + "/api/v1/dirs/job/j/staging")));
            assertTrue(staging.statusCode() == 404 || json.readTree(staging.body()).path("entries").isEmpty(),
                    new String(staging.body(), StandardCharsets.UTF_8));
        }
        assertLoaded(List.of(w0, w1), Ptc.packed(model, mid, 2), 0, full);
        hold.close();
        // the operator restarts worker 2's daemon; the same reconfiguration now commits
        DaemonProcess w2again = start();
        JsonNode retried = await(reconfigure(config(a, 2, 0), config(a, 2, 1), addresses(w0.address(), w1.address(),
                w2again.address()), 20));
        assertEquals("committed", retried.get("state").asText(), retried.toString());
        assertLoaded(List.of(w0, w1, w2again), Ptc.packed(model, a, 2), 1, full);
    }

    @Test
    void bytesDamagedInTransit_areDetectedByChecksum_andFetchedAgain() throws Exception {
        DaemonProcess w0 = start();
        DaemonProcess w1 = start();
        DaemonProcess w2 = start();
        ParallelConfig a = ParallelConfig.of(2, 1, 2);
        Ptc from = Ptc.packed(model, a, 2); // data-parallel replicas on workers 0 and 1
        Map<String, byte[]> full = save(List.of(w0, w1), from);
        FaultProxy p0 = proxy(w0, FaultProxy.Mode.CORRUPT);
        FaultProxy p1 = proxy(w1, FaultProxy.Mode.CORRUPT);
        ParallelConfig b = ParallelConfig.of(4, 1, 1);
        JsonNode r = await(reconfigure(config(a, 2, 0), config(b, 4, 2), addresses(
                new InetSocketAddress("127.0.0.1", p0.port()), new InetSocketAddress("127.0.0.1", p1.port()),
                w2.address()), 30));
        assertEquals("committed", r.get("state").asText(), r.toString());
        int flipped = p0.flipped.get() + p1.flipped.get();
        assertTrue(flipped >= 1, "no byte was damaged: the test proves nothing");
        assertEquals(flipped, r.at("/workers/2/corrupted").asInt(), r.toString());
        assertTrue(r.at("/workers/2/retries").asInt() >= flipped, r.toString());
        assertLoaded(List.of(w0, w1, w2), Ptc.packed(model, b, 4), 2, full);
    }
}
