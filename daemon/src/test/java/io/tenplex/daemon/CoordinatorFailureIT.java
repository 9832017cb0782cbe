package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.server.jobs.JobRoutes;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The coordinating daemon dies between the commits of a reconfiguration (a real process, halted by
 * the test-only failure point {@code tenplex.test.haltAfterCommits}): the surviving workers, all
 * prepared and in doubt, resolve it after their prepared timeout and converge on one generation, with
 * no staging left behind.
 */
class CoordinatorFailureIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private final Model model = MegatronLayout.model(GPT);
    private final ProcessCluster cluster = new ProcessCluster(model);

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    /** Daemon 0 coordinates (halting after {@code haltAfter} commits); daemons 1..3 are workers 0..2. */
    private List<DaemonProcess> start(int haltAfter) throws Exception {
        cluster.daemons.add(DaemonProcess.start(List.of("-Dtenplex.test.haltAfterCommits=" + haltAfter), "--port", "0",
                "--memory-limit", "128m"));
        for (int i = 0; i < 3; i++) {
            cluster.start();
        }
        return cluster.daemons.subList(1, 4);
    }

    private String daemonsJson(List<DaemonProcess> workers) {
        StringBuilder d = new StringBuilder("{");
        for (int w = 0; w < workers.size(); w++) {
            d.append(w > 0 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:").append(workers.get(w).address()
                    .getPort()).append('"');
        }
        return d.append('}').toString();
    }

    /** Posts a reconfiguration to {@code coordinator}; its status route. */
    private String reconfigure(DaemonProcess coordinator, List<DaemonProcess> workers, String from, String to, long step)
            throws Exception {
        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + from + ", \"to\": " + to
                + ", \"daemons\": " + daemonsJson(workers) + ", \"step\": " + step + ", \"preparedTimeoutMillis\": 500}";
        HttpResponse<byte[]> r = cluster.send(HttpRequest.newBuilder(URI.create(coordinator.url() + JobRoutes.PREFIX
                + "j/reconfigure")).POST(HttpRequest.BodyPublishers.ofString(body)));
        assertEquals(202, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        return cluster.json(r.body()).get("status").asText();
    }

    private String iter(DaemonProcess d) throws Exception {
        return new String(cluster.get(d, "/api/v1/files/job/j/iter"), StandardCharsets.US_ASCII);
    }

    private boolean nothingStaged(DaemonProcess d) throws Exception {
        HttpResponse<byte[]> staging = cluster.send(HttpRequest.newBuilder(URI.create(d.url()
                + "/api/v1/dirs/job/j/staging")));
        return staging.statusCode() == 404 || cluster.json(staging.body()).path("entries").isEmpty();
    }

    private long usedBytes(DaemonProcess d) throws Exception {
        for (String line : new String(cluster.get(d, "/metrics"), StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("tenplex_store_used_bytes ")) {
                return (long) Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim());
            }
        }
        throw new AssertionError("no tenplex_store_used_bytes in /metrics");
    }

    /** Polls every worker (every 100 ms, up to 60 s) until all satisfy {@code done}. */
    private void awaitAll(List<DaemonProcess> workers, Predicate<DaemonProcess> done, String what) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!workers.stream().allMatch(done)) {
            assertTrue(System.nanoTime() < deadline, "workers did not converge: " + what);
            java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L); // polling a remote condition
        }
    }

    private Predicate<DaemonProcess> at(String step) {
        return d -> {
            try {
                return iter(d).equals(step) && nothingStaged(d);
            } catch (Exception e) {
                return false;
            }
        };
    }

    /** Saves (2,1,2) on workers 0 and 1, then commits a first generation (step 10) on all three workers. */
    private Map<String, byte[]> firstGeneration(List<DaemonProcess> workers) throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 1, 2);
        Map<String, byte[]> full = cluster.save("j", Ptc.packed(model, a, 2), 1);
        String status = reconfigure(workers.get(0), workers, ProcessCluster.config(a, 2, 0),
                ProcessCluster.config(ParallelConfig.of(2, 1, 3), 2, 0), 10);
        JsonNode first = cluster.json(cluster.get(workers.get(0), status + "?wait=true"));
        assertEquals("committed", first.get("state").asText(), first.toString());
        return full;
    }

    @Test
    void coordinatorDiesAfterTheFirstCommit_theOthersCommitToo() throws Exception {
        List<DaemonProcess> workers = start(1);
        Map<String, byte[]> full = firstGeneration(workers);
        ParallelConfig next = ParallelConfig.of(1, 1, 6);
        reconfigure(cluster.daemons.get(0), workers, ProcessCluster.config(ParallelConfig.of(2, 1, 2), 2, 0),
                ProcessCluster.config(next, 2, 0), 20);
        assertEquals(86, cluster.daemons.get(0).awaitExit()); // halted between the commits
        awaitAll(workers, at("20"), "all at step 20 with nothing staged");
        cluster.assertLoaded("j", workers, Ptc.packed(model, next, 2), 0, full);
    }

    @Test
    void coordinatorDiesBeforeAnyCommit_everyPartAborts_andReleasesItsStaging() throws Exception {
        List<DaemonProcess> workers = start(0);
        Map<String, byte[]> full = firstGeneration(workers);
        long[] before = new long[3];
        for (int w = 0; w < 3; w++) {
            before[w] = usedBytes(workers.get(w));
        }
        reconfigure(cluster.daemons.get(0), workers, ProcessCluster.config(ParallelConfig.of(2, 1, 2), 2, 0),
                ProcessCluster.config(ParallelConfig.of(1, 1, 6), 2, 0), 20);
        assertEquals(86, cluster.daemons.get(0).awaitExit()); // halted with every part prepared
        awaitAll(workers, at("10"), "all back at step 10 with nothing staged");
        for (int w = 0; w < 3; w++) {
            assertEquals(before[w], usedBytes(workers.get(w)), "worker " + w + "'s memory after the abort");
        }
        cluster.assertLoaded("j", workers, Ptc.packed(model, ParallelConfig.of(2, 1, 3), 2), 0, full);
    }
}
