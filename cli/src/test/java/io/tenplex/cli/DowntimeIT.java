package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reconfiguration's downtime with a real daemon and real Python ranks under {@code tenplex run}: two
 * data-parallel changes (2 -> 1 -> 2 ranks, relaunched); the tenplex calls mark and report the phases by
 * themselves. Each change's split is complete, its phases are those of relaunch mode, non-negative and
 * sum to its downtime, which agrees with what the ranks measured themselves (from the first rank's stop
 * to the last new rank's first step); it is printed as it ends and in the summary (no "stop+save"), and
 * it is in the change's status, the job's downtime status and {@code /metrics}.
 */
class DowntimeIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final double TOLERANCE_S = 0.1;
    private final HttpClient http = HttpClient.newHttpClient();

    private JsonNode get(String base, String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return TenplexCli.JSON.readTree(r.body());
    }

    /** The observations of a histogram without labels, from the daemon's {@code /metrics}. */
    private double count(String base, String family) throws Exception {
        String text = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        return text.lines().filter(l -> l.startsWith(family + "_count ")).mapToDouble(l -> Double.parseDouble(
                l.substring(family.length() + 7))).findFirst().orElseThrow(() -> new AssertionError(family
                        + " is not in /metrics"));
    }

    @Test
    void relaunchedChanges_reportTheirSplit_inOutputStatusAndMetrics(@TempDir Path dir) throws Exception {
        runAndCheck(dir, false, List.of("save", "commit", "relaunch", "load", "first_step"));
    }

    /** Live mode: the kept rank keeps its process; its split has the regroup and rebuild in place of the relaunch. */
    @Test
    void liveChanges_reportTheirSplit_withRegroupAndRebuild_inOutputStatusAndMetrics(@TempDir Path dir) throws Exception {
        String text = runAndCheck(dir, true, List.of("save", "commit", "regroup", "rebuild", "load", "first_step"));
        assertTrue(text.contains("live: ranks 0-0 continue in place"), text);
        assertFalse(text.contains("relaunching"), text);
    }

    private String runAndCheck(Path dir, boolean live, List<String> phases) throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 2}, {\"step\": 3, \"size\": 1, \"tp\": 1, \"pp\": 1, \"dp\": 1}, {\"step\": 6, \"size\": 2, "
                + "\"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        double before;
        double after;
        String text;
        List<JsonNode> splits = new ArrayList<>();
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String base = "http://127.0.0.1:" + d.address().getPort();
            before = count(base, "tenplex_reconfiguration_downtime_seconds");
            List<String> args = new ArrayList<>(List.of("run", "--addr", "127.0.0.1:" + d.address().getPort(), "--job",
                    "dt", "--schedule", schedule.toString()));
            if (live) {
                args.add("--live");
            }
            args.addAll(List.of("--", "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/"
                    + (live ? "downtime_live_rank.py" : "downtime_rank.py")).toString(),
                    ROOT.resolve("clients/python").toString(), out.toString(), "9", "0.1"));
            text = CliIT.run(0, args.toArray(String[]::new));
            JsonNode job = get(base, "/api/v1/jobs/dt/downtime").path("reconfigurations");
            assertEquals(2, job.size(), job.toString());
            for (JsonNode c : job) {
                JsonNode status = get(base, "/api/v1/jobs/dt/resources/" + c.path("change").asText());
                assertEquals(c.path("downtime"), status.path("downtime"), "the change's status and the job's agree");
                splits.add(status);
            }
            after = count(base, "tenplex_reconfiguration_downtime_seconds");
        }
        assertTrue(text.contains("reconfiguration at step 3: downtime "), text);
        assertTrue(text.contains("reconfiguration at step 6: downtime "), text);
        assertFalse(text.contains("stop+save"), text);
        String head = phases.get(2) + " ";
        assertEquals(2, text.lines().filter(l -> l.startsWith("  step ") && l.contains("; downtime ")
                && l.contains(head) && l.contains("commit wait ")).count(), text);
        for (JsonNode s : splits) {
            assertSplit(s, out, text, phases);
        }
        assertEquals(before + 2, after, "each split observed once in /metrics");
        return text;
    }

    /** A change's split: complete, relaunch mode's phases, non-negative, summing to what the ranks measured. */
    private static void assertSplit(JsonNode status, Path out, String text, List<String> want) throws Exception {
        JsonNode d = status.path("downtime");
        long step = status.path("generation").asLong();
        assertTrue(d.path("complete").asBoolean(), d.toString());
        List<String> phases = new ArrayList<>();
        double sum = 0;
        for (var it = d.path("phases").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            phases.add(e.getKey());
            assertTrue(e.getValue().asDouble() >= 0, d.toString());
            sum += e.getValue().asDouble();
        }
        assertEquals(want, phases, d.toString());
        assertEquals(d.path("seconds").asDouble(), sum, 1e-6, d.toString());
        assertTrue(d.path("waitForStopSeconds").asDouble() >= 0, d.toString());
        assertTrue(d.path("daemon").has("plan") && d.path("daemon").has("move")
                && d.path("daemon").has("spawn") == want.contains("relaunch"),
                d.toString());
        int segment = step == 3 ? 0 : 1;
        double stop = Double.MAX_VALUE;
        double first = 0;
        int started = 0;
        for (Path f : Files.list(out).toList()) {
            JsonNode t = TenplexCli.JSON.readTree(f.toFile());
            if (t.path("segment").asInt() == segment && t.has("stop")) {
                stop = Math.min(stop, t.path("stop").asDouble());
            }
            if (t.path("segment").asInt() == segment + 1 && t.path("loaded").asLong(-1) == step) {
                first = Math.max(first, t.path("first_step").asDouble());
                started++;
            }
        }
        assertEquals(d.path("ranksStarted").asInt(), started, d.toString());
        assertEquals(first - stop, d.path("seconds").asDouble(), TOLERANCE_S,
                "the split's downtime is what the ranks measured: " + d + "\n" + text);
    }
}
