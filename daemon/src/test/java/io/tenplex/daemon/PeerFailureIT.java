package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.control.PartStatus;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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
    private final ProcessCluster cluster = new ProcessCluster(model);
    private final List<FaultProxy> proxies = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        proxies.forEach(FaultProxy::close);
        cluster.close();
    }

    private DaemonProcess start() throws Exception {
        return cluster.start();
    }

    private FaultProxy proxy(DaemonProcess d, FaultProxy.Mode mode) throws Exception {
        FaultProxy p = new FaultProxy(d.address(), mode);
        proxies.add(p);
        return p;
    }

    private static String config(ParallelConfig c, int perWorker, int firstWorker) {
        return ProcessCluster.config(c, perWorker, firstWorker);
    }

    private String reconfigure(String from, String to, Map<Integer, InetSocketAddress> addrs, long step) throws Exception {
        return cluster.reconfigure("j", from, to, addrs, step);
    }

    private JsonNode await(String status) throws Exception {
        return cluster.await(status);
    }

    private byte[] get(DaemonProcess d, String path) throws Exception {
        return cluster.get(d, path);
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
        Map<String, byte[]> full = cluster.save("j", from, 0);
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
        PartStatus part = PartStatus.parseFrom(get(w2, JobRoutes.PREFIX + "j/parts/" + plan));
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
            HttpResponse<byte[]> staging = cluster.send(HttpRequest.newBuilder(URI.create(d.url()
                    + "/api/v1/dirs/job/j/staging")));
            assertTrue(staging.statusCode() == 404 || cluster.json(staging.body()).path("entries").isEmpty(),
                    new String(staging.body(), StandardCharsets.UTF_8));
        }
        cluster.assertLoaded("j", List.of(w0, w1), Ptc.packed(model, mid, 2), 0, full);
        hold.close();
        // the operator restarts worker 2's daemon; the same reconfiguration now commits
        DaemonProcess w2again = start();
        JsonNode retried = await(reconfigure(config(a, 2, 0), config(a, 2, 1), addresses(w0.address(), w1.address(),
                w2again.address()), 20));
        assertEquals("committed", retried.get("state").asText(), retried.toString());
        cluster.assertLoaded("j", List.of(w0, w1, w2again), Ptc.packed(model, a, 2), 1, full);
    }

    @Test
    void bytesDamagedInTransit_areDetectedByChecksum_andFetchedAgain() throws Exception {
        DaemonProcess w0 = start();
        DaemonProcess w1 = start();
        DaemonProcess w2 = start();
        ParallelConfig a = ParallelConfig.of(2, 1, 2);
        Ptc from = Ptc.packed(model, a, 2); // data-parallel replicas on workers 0 and 1
        Map<String, byte[]> full = cluster.save("j", from, 0);
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
        cluster.assertLoaded("j", List.of(w0, w1, w2), Ptc.packed(model, b, 4), 2, full);
    }

    @Test
    void checksumStrippedAndBytesDamaged_failTheReconfiguration_reportCorrupted_keepThePreviousGeneration()
            throws Exception {
        DaemonProcess w0 = start();
        DaemonProcess w1 = start();
        DaemonProcess w2 = start();
        ParallelConfig a = ParallelConfig.of(2, 1, 2);
        Map<String, byte[]> full = cluster.save("j", Ptc.packed(model, a, 2), 0); // replicas on workers 0 and 1
        ParallelConfig b = ParallelConfig.of(4, 1, 1);
        JsonNode first = await(reconfigure(config(a, 2, 0), config(b, 4, 2), addresses(w0.address(), w1.address(),
                w2.address()), 10));
        assertEquals("committed", first.get("state").asText(), first.toString());
        String probe = "/api/v1/tensors/job/j/load/0/language_model.encoder.layers.0.mlp.dense_h_to_4h.weight";
        byte[] before = get(w2, probe);
        // every holder's answer loses its checksum and one byte on the way: nothing can be verified
        FaultProxy p0 = proxy(w0, FaultProxy.Mode.STRIP_AND_CORRUPT);
        FaultProxy p1 = proxy(w1, FaultProxy.Mode.STRIP_AND_CORRUPT);
        JsonNode r = await(reconfigure(config(a, 2, 0), config(b, 4, 2), addresses(
                new InetSocketAddress("127.0.0.1", p0.port()), new InetSocketAddress("127.0.0.1", p1.port()),
                w2.address()), 30));
        assertEquals("aborted", r.get("state").asText(), r.toString());
        int flipped = p0.flipped.get() + p1.flipped.get();
        assertTrue(flipped >= 1, "no byte was damaged: the test proves nothing");
        assertEquals("failed", r.at("/workers/2/state").asText(), r.toString());
        assertTrue(r.at("/workers/2/corrupted").asInt() >= 1, r.toString());
        assertTrue(r.at("/workers/2/retries").asInt() >= r.at("/workers/2/corrupted").asInt(), r.toString());
        assertTrue(r.get("error").asText().contains("x-tensor-crc32c"), r.toString());
        // the previous generation is intact and nothing is left staged
        assertArrayEquals(before, get(w2, probe));
        assertEquals("10", new String(get(w2, "/api/v1/files/job/j/iter"), StandardCharsets.US_ASCII));
        HttpResponse<byte[]> staging = cluster.send(HttpRequest.newBuilder(URI.create(w2.url()
                + "/api/v1/dirs/job/j/staging")));
        assertTrue(staging.statusCode() == 404 || cluster.json(staging.body()).path("entries").isEmpty(),
                new String(staging.body(), StandardCharsets.UTF_8));
        cluster.assertLoaded("j", List.of(w0, w1, w2), Ptc.packed(model, b, 4), 2, full);
    }
}
