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
 * Tests (b) and (c) of the checkpoint tiers, with real processes: four daemons started with
 * {@code --peers}, a job saved with one partner copy per worker (L2) or in erasure-coded groups of 3
 * with one parity block (L3), rank r on worker r; one daemon killed with SIGKILL, and a
 * reconfiguration onto the three survivors with a new (T,P,D) that reads the lost rank from its
 * partner's copy or rebuilds it from parity. The loaded shards are compared with sharding the
 * original tensors directly.
 */
class PartnerRecoveryIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final ParallelConfig FROM = ParallelConfig.of(2, 1, 2);
    private final Model model = MegatronLayout.model(GPT);
    private final ProcessCluster cluster = new ProcessCluster(model);

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    /** Four daemons on ports chosen up front, each told of all by {@code --peers}, with {@code options}. */
    private void startFour(String... options) throws Exception {
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
            List<String> args = new ArrayList<>(List.of("--port", Integer.toString(ports.get(w)), "--memory-limit",
                    "256m", "--peers", peers.toString()));
            args.addAll(List.of(options));
            cluster.daemons.add(DaemonProcess.start(args.toArray(String[]::new)));
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

    /** (2,1,3) on the three survivors, two devices each (explicit devices, worker number = daemon index). */
    private static String onSurvivors(int lost) {
        StringBuilder d = new StringBuilder();
        for (int w = 0; w < 4; w++) {
            if (w != lost) {
                d.append(d.length() > 0 ? "," : "").append("[").append(w).append(",0],[").append(w).append(",1]");
            }
        }
        return "{\"tp\": 2, \"pp\": 1, \"dp\": 3, \"devices\": [" + d + "]}";
    }

    /**
     * Saves the job (rank r on worker r) with {@code tiers} on every daemon, waits until the generation
     * reached {@code level} everywhere, kills worker {@code lost} with SIGKILL and reconfigures onto the
     * survivors; answers the reconfiguration's status after checking every new shard.
     */
    private JsonNode loseAndRecover(String tiers, String level, int lost, boolean resourceChange) throws Exception {
        List<DaemonProcess> all = cluster.daemons;
        for (DaemonProcess d : all) {
            HttpResponse<byte[]> r = send(d, "PUT", JobRoutes.PREFIX + "j/tiers", tiers);
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        Map<String, byte[]> full = saveEverywhere(10, "j".hashCode(), level);
        assertEquals(137, all.get(lost).signal("KILL"));
        String to = onSurvivors(lost);
        JsonNode status = resourceChange ? recoverByResourceChange(all.get(0), to) : reconfigure(all.get(0), to);
        assertEquals("committed", status.path("state").asText(), status.toString());
        assertEquals("peer-to-peer, each daemon planning its own part", status.path("mode").asText(), status.toString());
        cluster.assertLoaded("j", all, ConfigJson.ptc(model, cluster.json(to.getBytes(StandardCharsets.UTF_8)), "to"), 0,
                full);
        return status;
    }

    /** Saves and seals generation {@code step} (rank r on worker r); waits until it reached {@code level} everywhere. */
    private Map<String, byte[]> saveEverywhere(long step, long seed, String level) throws Exception {
        List<DaemonProcess> all = cluster.daemons;
        Map<String, byte[]> full = cluster.save("j", Ptc.packed(model, FROM, 1), 0, seed);
        String config = ProcessCluster.config(FROM, 1, 0);
        for (int rank = 0; rank < 4; rank++) {
            HttpResponse<byte[]> r = send(all.get(rank), "POST", JobRoutes.PREFIX + "j/saves/" + step + "/ranks/" + rank,
                    "{\"world\": 4, \"config\": " + config + "}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        awaitAll(all, d -> {
            try {
                return generation(d, step).path("levels").toString().contains(level);
            } catch (Exception e) {
                return false;
            }
        }, "generation " + step + " reaches level " + level + " everywhere");
        return full;
    }

    private JsonNode reconfigure(DaemonProcess coordinator, String to) throws Exception {
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"to\": " + to + ", \"step\": 11}";
        HttpResponse<byte[]> started = send(coordinator, "POST", JobRoutes.PREFIX + "j/reconfigure", body);
        assertEquals(202, started.statusCode(), new String(started.body(), StandardCharsets.UTF_8));
        return cluster.await(cluster.json(started.body()).get("status").asText());
    }

    /** {@code POST .../resources} with {@code "recover": true}; the status of the reconfiguration it ran. */
    private JsonNode recoverByResourceChange(DaemonProcess coordinator, String to) throws Exception {
        assertEquals(201, send(coordinator, "PUT", "/api/v1/files/job/j/model.json", ModelSpecJson.write(model))
                .statusCode());
        JsonNode c = cluster.json(to.getBytes(StandardCharsets.UTF_8));
        String body = "{\"devices\": " + c.get("devices") + ", \"config\": {\"tp\": 2, \"pp\": 1, \"dp\": 3}, "
                + "\"recover\": true}";
        HttpResponse<byte[]> started = send(coordinator, "POST", JobRoutes.PREFIX + "j/resources", body);
        assertEquals(202, started.statusCode(), new String(started.body(), StandardCharsets.UTF_8));
        JsonNode change = cluster.await(cluster.json(started.body()).get("status").asText());
        assertEquals("done", change.path("state").asText(), change.toString());
        return change.path("reconfiguration");
    }

    @Test
    void partnerCopies_oneOfFourDaemonsKilled_resourceChangeOntoTheSurvivors_matchesDirectSharding() throws Exception {
        startFour();
        JsonNode status = loseAndRecover("{\"partners\": 1}", "partners", 3, true);
        for (int w = 0; w < 3; w++) { // worker w holds its own rank and the copy of worker w-1's, nothing else
            assertEquals(new TreeSet<>(Set.of(Integer.toString(w), Integer.toString(Math.floorMod(w - 1, 4)),
                    "manifests")), replicas(cluster.daemons.get(w), 10), "worker " + w);
        }
        assertEquals("partner copy on worker 0 (worker 3 lost)", status.path("sources").path("3").asText(),
                status.toString());
        assertEquals("memory of worker 2", status.path("sources").path("2").asText(), status.toString());
    }

    @Test
    void erasureGroups_k3m1_oneOfFourDaemonsKilled_rebuiltFromParity_matchesDirectSharding() throws Exception {
        startFour();
        JsonNode status = loseAndRecover("{\"groupSize\": 3, \"parity\": 1}", "erasure", 1, false);
        assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", status.path("sources").path("1").asText(),
                status.toString());
        assertEquals("memory of worker 3", status.path("sources").path("3").asText(), status.toString());
    }

    /**
     * L4 in the recovery order: no partner copies or parity, every daemon flushing to its own directory
     * on storage all of them mount ({@code --checkpoint-dir .../w{worker}}). Worker 3's flush of the
     * newest generation (20) had not finished when it was killed (its manifest removed, as a crash
     * mid-flush leaves it), so the current generation cannot be recovered; the resource change
     * recovers generation 10, which the survivors still hold in memory and worker 3's directory on
     * disk, and says where each rank came from.
     */
    @Test
    void durableDirectories_oneOfFourDaemonsKilled_olderGenerationRecoveredFromTheLostWorkersDisk(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        startFour("--checkpoint-dir", dir.resolve("w{worker}").toString());
        for (DaemonProcess d : cluster.daemons) {
            assertEquals(200, send(d, "PUT", JobRoutes.PREFIX + "j/tiers", "{\"durableKeep\": 2}").statusCode());
        }
        Map<String, byte[]> tenth = saveEverywhere(10, 10, "durable");
        saveEverywhere(20, 20, "durable");
        assertTrue(java.nio.file.Files.isRegularFile(dir.resolve("w3/jobs/j/10/manifest.json")));
        java.nio.file.Files.delete(dir.resolve("w3/jobs/j/20/manifest.json"));
        assertEquals(137, cluster.daemons.get(3).signal("KILL"));
        String to = onSurvivors(3);
        JsonNode status = recoverByResourceChange(cluster.daemons.get(0), to);
        assertEquals("committed", status.path("state").asText(), status.toString());
        assertEquals("/job/j/generations/10", status.path("source").asText(), status.toString());
        assertEquals("durable copy read on worker 0 (worker 3 lost)", status.path("sources").path("3").asText(),
                status.toString());
        assertEquals("memory of worker 1", status.path("sources").path("1").asText(), status.toString());
        cluster.assertLoaded("j", cluster.daemons, ConfigJson.ptc(model, cluster.json(to.getBytes(
                StandardCharsets.UTF_8)), "to"), 0, tenth);
        List<DaemonProcess> survivors = cluster.daemons.subList(0, 3);
        for (DaemonProcess d : survivors) { // generation 20 is abandoned, in memory and on disk
            JsonNode g = cluster.json(cluster.get(d, JobRoutes.PREFIX + "j/generations"));
            assertEquals(10, g.path("current").asLong(), g.toString());
            JsonNode twenty = generation(d, 20); // gone, and listed as lost with the reason
            assertTrue(!twenty.path("complete").asBoolean() && twenty.path("localRanks").isEmpty()
                    && twenty.path("lost").asText().startsWith("superseded: the job went back to generation 10"),
                    g.toString());
        }
        awaitAll(survivors, d -> !java.nio.file.Files.exists(dir.resolve("w" + cluster.daemons.indexOf(d)
                + "/jobs/j/20/manifest.json")), "generation 20 deleted from the survivors' directories");
        ParallelConfig now = ParallelConfig.of(2, 1, 3);
        cluster.save("j", Ptc.packed(model, now, 2), 0, 30);
        for (int rank = 0; rank < 6; rank++) { // the resumed job saves step 20 again, in its new configuration
            HttpResponse<byte[]> r = send(cluster.daemons.get(rank / 2), "POST", JobRoutes.PREFIX + "j/saves/20/ranks/"
                    + rank, "{\"world\": 6, \"config\": " + ProcessCluster.config(now, 2, 0) + "}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        awaitAll(survivors, d -> {
            try {
                return generation(d, 20).path("levels").toString().contains("durable");
            } catch (Exception e) {
                return false;
            }
        }, "the new generation 20 is complete and flushed");
    }
}
