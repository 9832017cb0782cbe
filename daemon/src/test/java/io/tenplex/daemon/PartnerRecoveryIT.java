package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.jobs.JobRoutes;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Test (b) of the checkpoint tiers, with real processes: four daemons started with {@code --peers},
 * a job saved with one partner copy per worker (rank r on worker r), one daemon killed with SIGKILL,
 * and a reconfiguration onto the three survivors with a new (T,P,D) that reads the lost rank from its
 * partner's copy. The loaded shards are compared with sharding the original tensors directly.
 */
class PartnerRecoveryIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final ParallelConfig FROM = ParallelConfig.of(2, 1, 2);
    private static final ParallelConfig TO = ParallelConfig.of(2, 1, 3);
    private final Model model = MegatronLayout.model(GPT);
    private final ProcessCluster cluster = new ProcessCluster(model);

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    /** Four daemons on ports chosen up front, each told of all by {@code --peers}. */
    private void startFour() throws Exception {
        List<Integer> ports = new ArrayList<>();
        List<ServerSocket> held = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
            held.add(s);
            ports.add(s.getLocalPort());
        }
        for (ServerSocket s : held) {
            s.close();
        }
        StringBuilder peers = new StringBuilder();
        for (int w = 0; w < 4; w++) {
            peers.append(w > 0 ? "," : "").append(w).append("=127.0.0.1:").append(ports.get(w));
        }
        for (int w = 0; w < 4; w++) {
            cluster.daemons.add(DaemonProcess.start("--port", Integer.toString(ports.get(w)), "--memory-limit", "256m",
                    "--peers", peers.toString()));
        }
    }

    private HttpResponse<byte[]> send(DaemonProcess d, String method, String path, String body) throws Exception {
        return cluster.send(HttpRequest.newBuilder(URI.create(d.url() + path)).method(method,
                HttpRequest.BodyPublishers.ofString(body)));
    }

    private JsonNode generation(DaemonProcess d, long step) throws Exception {
        for (JsonNode g : cluster.json(cluster.get(d, JobRoutes.PREFIX + "j/generations")).path("generations")) {
            if (g.path("step").asLong() == step) {
                return g;
            }
        }
        return cluster.json("{}".getBytes(StandardCharsets.UTF_8));
    }

    /** The rank trees under {@code /job/j/replicas/<step>} of a daemon. */
    private Set<String> replicas(DaemonProcess d, long step) throws Exception {
        Set<String> out = new TreeSet<>();
        for (JsonNode e : cluster.json(cluster.get(d, "/api/v1/dirs/job/j/replicas/" + step)).path("entries")) {
            out.add(e.path("name").asText());
        }
        return out;
    }

    /** Polls (every 100 ms, up to 60 s) until every daemon satisfies {@code done}. */
    private void awaitAll(List<DaemonProcess> daemons, Predicate<DaemonProcess> done, String what) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!daemons.stream().allMatch(done)) {
            assertTrue(System.nanoTime() < deadline, "daemons did not converge: " + what);
            java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L); // polling a remote condition
        }
    }

    @Test
    void oneOfFourDaemonsKilled_reconfigureOntoTheSurvivors_matchesDirectSharding() throws Exception {
        startFour();
        List<DaemonProcess> all = cluster.daemons;
        for (DaemonProcess d : all) {
            HttpResponse<byte[]> r = send(d, "PUT", JobRoutes.PREFIX + "j/tiers", "{\"partners\": 1}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        Map<String, byte[]> full = cluster.save("j", Ptc.packed(model, FROM, 1), 0);
        String config = ProcessCluster.config(FROM, 1, 0);
        for (int rank = 0; rank < 4; rank++) {
            HttpResponse<byte[]> r = send(all.get(rank), "POST", JobRoutes.PREFIX + "j/saves/10/ranks/" + rank,
                    "{\"world\": 4, \"config\": " + config + "}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        awaitAll(all, d -> {
            try {
                return generation(d, 10).path("levels").toString().contains("partners");
            } catch (Exception e) {
                return false;
            }
        }, "generation 10 reaches the partner level everywhere");
        for (int w = 0; w < 4; w++) { // worker w holds its own rank and the copy of worker w-1's, nothing else
            assertEquals(new TreeSet<>(Set.of(Integer.toString(w), Integer.toString(Math.floorMod(w - 1, 4)),
                    "manifests")), replicas(all.get(w), 10), "worker " + w);
        }

        assertEquals(137, all.get(3).signal("KILL"));
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"to\": " + ProcessCluster.config(TO, 2, 0)
                + ", \"step\": 11}";
        HttpResponse<byte[]> started = send(all.get(0), "POST", JobRoutes.PREFIX + "j/reconfigure", body);
        assertEquals(202, started.statusCode(), new String(started.body(), StandardCharsets.UTF_8));
        JsonNode status = cluster.await(cluster.json(started.body()).get("status").asText());
        assertEquals("committed", status.path("state").asText(), status.toString());
        assertEquals("partner copy on worker 0 (worker 3 lost)", status.path("sources").path("3").asText(),
                status.toString());
        assertEquals("memory of worker 2", status.path("sources").path("2").asText(), status.toString());
        cluster.assertLoaded("j", all.subList(0, 3), Ptc.packed(model, TO, 2), 0, full);
    }
}
