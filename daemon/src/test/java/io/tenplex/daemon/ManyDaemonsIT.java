package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.jobs.JobRoutes;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Every daemon planning its own part at the largest count this machine holds: 32 tenplexd processes
 * on loopback (small heaps, one device each, told of each other by {@code --peers}), a GPT-shaped
 * job saved as a generation. A (T,P,D) change is byte-exact against sharding the same tensors
 * directly (what a static run at the new configuration holds); a daemon SIGKILLed while the parts
 * move aborts the change, the previous generation stays the job's, and the job is then recovered
 * onto the 31 survivors from the lost worker's partner copy, byte-exact again. The tests run in
 * order on one cluster (the second loses a daemon).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ManyDaemonsIT {
    private static final int WORKERS = 32;
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final Model MODEL = MegatronLayout.model(GPT);
    private static final ParallelConfig FROM = ParallelConfig.of(2, 4, 4);
    private static final String ONE_EACH = "{\"tp\": %d, \"pp\": %d, \"dp\": %d, \"devicesPerWorker\": 1, "
            + "\"firstWorker\": 0}";
    private static ProcessCluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new ProcessCluster(MODEL);
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(WORKERS);
        ExecutorService starting = Executors.newFixedThreadPool(8);
        try {
            List<Future<DaemonProcess>> started = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                String port = peers.port(w);
                started.add(starting.submit(() -> DaemonProcess.start(List.of("-Xmx96m", "-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=512m",
                        "-XX:TieredStopAtLevel=1"), "--port", port, "--memory-limit", "96m", "--peers", peers.arg())));
            }
            for (Future<DaemonProcess> f : started) {
                cluster.daemons.add(f.get(5, TimeUnit.MINUTES)); // in worker order: index = worker
            }
        } finally {
            starting.shutdown();
        }
    }

    @AfterAll
    static void stop() throws Exception {
        cluster.close();
    }

    private static HttpResponse<byte[]> send(DaemonProcess d, String method, String path, String body) throws Exception {
        return cluster.send(HttpRequest.newBuilder(URI.create(d.url() + path)).method(method,
                HttpRequest.BodyPublishers.ofString(body)));
    }

    /** The job's current generation on daemon {@code d}, or -1. */
    private static long current(DaemonProcess d, String job) throws Exception {
        return cluster.json(cluster.get(d, JobRoutes.PREFIX + job + "/generations")).path("current").asLong(-1);
    }

    /**
     * Saves and seals generation {@code step} of {@code job} at (2,4,4), rank r on worker r, with
     * {@code tiers} on every daemon (null: the default, memory only); waits until every daemon has {@code level}.
     */
    private static Map<String, byte[]> saveGeneration(String job, long step, String tiers, String level) throws Exception {
        for (DaemonProcess d : tiers == null ? List.<DaemonProcess>of() : cluster.daemons) {
            HttpResponse<byte[]> r = send(d, "PUT", JobRoutes.PREFIX + job + "/tiers", tiers);
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        Map<String, byte[]> full = cluster.save(job, Ptc.packed(MODEL, FROM, 1), 0, job.hashCode());
        String config = ProcessCluster.config(FROM, 1, 0);
        for (int rank = 0; rank < WORKERS; rank++) {
            HttpResponse<byte[]> r = send(cluster.daemons.get(rank), "POST", JobRoutes.PREFIX + job + "/saves/" + step
                    + "/ranks/" + rank, "{\"world\": " + WORKERS + ", \"config\": " + config + "}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        for (DaemonProcess d : cluster.daemons) {
            while (!levels(d, job, step).contains(level)) {
                assertTrue(System.nanoTime() < deadline, "generation " + step + " did not reach " + level);
                java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L); // polling a remote condition
            }
        }
        return full;
    }

    private static String levels(DaemonProcess d, String job, long step) throws Exception {
        for (JsonNode g : cluster.json(cluster.get(d, JobRoutes.PREFIX + job + "/generations")).path("generations")) {
            if (g.path("step").asLong() == step) {
                return g.path("levels").toString();
            }
        }
        return "";
    }

    /** Posts a change of {@code job}'s current generation to {@code to} ({@code , "k": v} more); its status URL. */
    private static String reconfigure(String job, String to, String more) throws Exception {
        String body = "{\"model\": " + ModelSpecJson.write(MODEL) + ", \"to\": " + to + ", \"step\": 11" + more + "}";
        HttpResponse<byte[]> r = send(cluster.daemons.get(0), "POST", JobRoutes.PREFIX + job + "/reconfigure", body);
        assertEquals(202, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return cluster.json(r.body()).get("status").asText();
    }

    @Test
    @Order(1)
    void tpdChange_across32Daemons_eachPlanningItsOwnPart_isByteExact() throws Exception {
        Map<String, byte[]> full = saveGeneration("a", 10, null, "memory");
        String to = String.format(ONE_EACH, 4, 2, 4);
        JsonNode r = cluster.await(reconfigure("a", to, ""));
        assertEquals("committed", r.path("state").asText(), r.toString());
        assertEquals("peer-to-peer, each daemon planning its own part", r.path("mode").asText(), r.toString());
        assertEquals(WORKERS, r.path("workers").size(), r.toString());
        assertEquals(r.at("/report/lowerBoundBytes").asLong(), r.at("/report/interWorkerBytes").asLong(), r.toString());
        cluster.assertLoaded("a", cluster.daemons, ConfigJson.ptc(MODEL, cluster.json(to.getBytes(StandardCharsets.UTF_8)),
                "to"), 0, full);
    }

    @Test
    @Order(2)
    void daemonKilledWhileTheMoveRuns_aborts_thenTheJobRecoversOntoTheSurvivors_byteExact() throws Exception {
        Map<String, byte[]> full = saveGeneration("b", 10, "{\"partners\": 1}", "partners");
        String status = reconfigure("b", String.format(ONE_EACH, 4, 2, 4), ", \"linkRate\": \"256kbit\"");
        DaemonProcess lost = cluster.daemons.get(WORKERS - 1);
        awaitMoving(status);
        assertEquals(137, lost.signal("KILL"));
        JsonNode aborted = cluster.await(status);
        assertEquals("aborted", aborted.path("state").asText(), aborted.toString());
        for (DaemonProcess d : cluster.daemons.subList(0, WORKERS - 1)) {
            assertEquals(10, current(d, "b"), "the previous generation stays the job's on " + d.url());
        }
        String to = "{\"tp\": 2, \"pp\": 1, \"dp\": 15, \"devicesPerWorker\": 1, \"firstWorker\": 0}";
        JsonNode r = cluster.await(reconfigure("b", to, ""));
        assertEquals("committed", r.path("state").asText(), r.toString());
        assertEquals("peer-to-peer, each daemon planning its own part", r.path("mode").asText(), r.toString());
        assertEquals("partner copy on worker 0 (worker 31 lost)", r.path("sources").path("31").asText(), r.toString());
        cluster.assertLoaded("b", cluster.daemons, ConfigJson.ptc(MODEL, cluster.json(to.getBytes(StandardCharsets.UTF_8)),
                "to"), 0, full);
    }

    /** Polls the change (every 20 ms, up to 60 s) until its parts move bytes and none has finished. */
    private static void awaitMoving(String status) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            JsonNode s = cluster.json(cluster.get(cluster.daemons.get(0), status));
            assertTrue(!s.path("state").asText().equals("committed") && System.nanoTime() < deadline, s.toString());
            long done = 0;
            for (JsonNode w : s.path("workers")) {
                done += w.path("bytesDone").asLong();
            }
            if (s.path("state").asText().equals("executing") && done > 0) {
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L); // polling a remote condition
        }
    }
}
