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
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reconfiguration's downtime with a real daemon and real Python ranks under {@code tenplex run}: two
 * data-parallel changes (2 -> 1 -> 2 ranks, relaunched); the tenplex calls mark and report the phases by
 * themselves. Each change's split is complete, its phases are those of relaunch mode, non-negative and
 * sum to its downtime, which agrees with what the ranks measured themselves (from the first rank's stop
 * to the last new rank's first step); it is in the change's status and the job's downtime status, and
 * what {@code tenplex run} prints as it ends and in its summary (no "stop+save") and what {@code /metrics}
 * observed are that status: the same phases in the same order, the same values (printed to the millisecond;
 * each family's count and sum grew by exactly the two splits' values).
 */
class DowntimeIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final double TOLERANCE_S = 0.1;
    private static final String DOWNTIME = "tenplex_reconfiguration_downtime_seconds";
    private static final String PHASE = "tenplex_reconfiguration_downtime_phase_seconds";
    /** A value of a printed split: its name and seconds, e.g. {@code commit wait 0.527 s}. */
    private static final Pattern PRINTED = Pattern.compile("([a-z][a-z ]*) (\\d+\\.\\d{3}) s");
    private static final Pattern WAIT = Pattern.compile("; (\\d+\\.\\d{3}) s from the change to the stop step");
    private final HttpClient http = HttpClient.newHttpClient();

    private JsonNode get(String base, String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return TenplexCli.JSON.readTree(r.body());
    }

    /** The count and sum of every downtime series in the daemon's {@code /metrics}, by series and labels. */
    private Map<String, Double> series(String base) throws Exception {
        String text = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Map<String, Double> out = new TreeMap<>();
        text.lines().filter(l -> (l.startsWith(DOWNTIME) || l.startsWith(PHASE))
                        && (l.contains("_sum") || l.contains("_count")))
                .forEach(l -> out.put(l.substring(0, l.lastIndexOf(' ')), Double.parseDouble(l.substring(
                        l.lastIndexOf(' ') + 1))));
        assertTrue(out.containsKey(DOWNTIME + "_count"), DOWNTIME + " is not in /metrics: " + text);
        return out;
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
        Map<String, Double> before;
        Map<String, Double> after;
        String text;
        List<JsonNode> splits = new ArrayList<>();
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String base = "http://127.0.0.1:" + d.address().getPort();
            before = series(base);
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
            after = series(base);
        }
        assertTrue(text.contains("reconfiguration at step 3: downtime "), text);
        assertTrue(text.contains("reconfiguration at step 6: downtime "), text);
        assertFalse(text.contains("stop+save"), text);
        String head = phases.get(2) + " ";
        assertEquals(2, text.lines().filter(l -> l.startsWith("  step ") && l.contains("; downtime ")
                && l.contains(head) && l.contains("commit wait ")).count(), text);
        for (JsonNode s : splits) {
            assertSplit(s, out, text, phases);
            assertPrinted(s, text);
        }
        assertObserved(splits, before, after);
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

    /**
     * The split as {@code tenplex run} printed it, when it ended and in the summary: the status's phases in
     * order (the daemon's plan, move and commit inside the commit wait), each value the status's to the
     * millisecond, and the wait for the stop step.
     */
    private static void assertPrinted(JsonNode status, String text) {
        JsonNode d = status.path("downtime");
        String step = status.path("generation").asText();
        List<String> want = new ArrayList<>(List.of(value("downtime", d.path("seconds"))));
        for (var it = d.path("phases").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            want.add(value(e.getKey().equals("commit") ? "commit wait" : e.getKey().replace('_', ' '), e.getValue()));
            for (String k : e.getKey().equals("commit") ? List.of("plan", "move", "commit") : List.<String>of()) {
                want.add(value(k, d.path("daemon").path(k)));
            }
        }
        want.add(value("from the change to the stop step", d.path("waitForStopSeconds")));
        for (String head : List.of("reconfiguration at step " + step + ": ", "  step " + step + ": ")) {
            String line = text.lines().filter(l -> l.contains(head)).findFirst().orElseThrow(() -> new AssertionError(
                    "no line with '" + head + "':\n" + text));
            Matcher w = WAIT.matcher(line);
            assertTrue(w.find(), "no wait for the stop step in " + line);
            List<String> got = new ArrayList<>();
            for (Matcher m = PRINTED.matcher(line.substring(line.indexOf("downtime "), w.start())); m.find(); ) {
                got.add(m.group(1) + " " + m.group(2));
            }
            got.add("from the change to the stop step " + w.group(1));
            assertEquals(want, got, "the printed split is the status's: " + line + "\n" + d);
        }
    }

    /** A value as the CLI prints it: its name and its seconds to the millisecond. */
    private static String value(String name, JsonNode seconds) {
        assertTrue(seconds.isNumber(), name + " is not in the status: " + seconds);
        return name + " " + String.format(Locale.ROOT, "%.3f", seconds.asDouble());
    }

    /**
     * What {@code /metrics} observed while the run went: each split once, with the status's values: the
     * downtime's count and sum grew by the two splits', each phase's (and {@code stop_wait}'s: the wait for
     * the stop step) by those of the splits that have it, and no other downtime series changed.
     */
    private static void assertObserved(List<JsonNode> splits, Map<String, Double> before, Map<String, Double> after) {
        Map<String, Double> want = new TreeMap<>();
        for (String k : after.keySet()) {
            want.put(k, 0.0);
        }
        for (JsonNode s : splits) {
            JsonNode d = s.path("downtime");
            Map<String, JsonNode> observed = new HashMap<>(Map.of("", d.path("seconds"), "stop_wait",
                    d.path("waitForStopSeconds")));
            d.path("phases").fields().forEachRemaining(e -> observed.put(e.getKey(), e.getValue()));
            observed.forEach((phase, v) -> {
                String labels = phase.isEmpty() ? "" : "{phase=\"" + phase + "\",}";
                String family = phase.isEmpty() ? DOWNTIME : PHASE;
                want.merge(family + "_count" + labels, 1.0, Double::sum);
                want.merge(family + "_sum" + labels, v.asDouble(), Double::sum);
            });
        }
        Map<String, Double> grew = new TreeMap<>();
        want.keySet().forEach(k -> grew.put(k, after.getOrDefault(k, Double.NaN) - before.getOrDefault(k, 0.0)));
        for (String k : want.keySet()) {
            assertEquals(want.get(k), grew.get(k), 1e-9, k + ": /metrics grew by " + grew + ", the statuses say " + want);
        }
    }
}
