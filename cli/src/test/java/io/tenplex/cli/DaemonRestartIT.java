package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.DaemonProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The daemon SIGKILLed while a scheduled change waits for its step, started again on its
 * {@code --checkpoint-dir}, then the same {@code tenplex run} command again: the first run ends
 * non-zero with every process it started gone; the restarted daemon has the job's newest durable
 * generation, its run record and the waiting change (same id); the second run resumes from that
 * generation, follows the kept change instead of posting another, applies it at its step, and ends
 * with every step counted exactly once. And a change that failed after its save, run again after a
 * restart: applied from the saved generation. Real daemon processes (SIGKILL), the packaged {@code
 * tenplex run} as a process, real Python ranks.
 */
class DaemonRestartIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final int STEPS = 300;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static JsonNode get(String url) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), url + ": " + r.body());
        return TenplexCli.JSON.readTree(r.body());
    }

    /** Waits (up to 120 s, while {@code run} lives) for a line of {@code log} matching {@code p}; its first group. */
    private static String awaitLine(Path log, Pattern p, Process run) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (true) {
            Matcher m = p.matcher(Files.exists(log) ? Files.readString(log) : "");
            if (m.find()) {
                return m.group(1);
            }
            assertTrue(run.isAlive() && System.nanoTime() < deadline, p + " never printed: " + Files.readString(log));
            LockSupport.parkNanos(20_000_000L); // polling the launcher's output
        }
    }

    @Test
    @Timeout(300)
    void daemonKilledWhileAChangeWaits_theSameCommandAfterItsRestart_appliesTheKeptChange(@TempDir Path dir)
            throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 2}, {\"step\": 150, \"size\": 1}]");
        String port = DaemonProcess.reservePeers(1).port(0);
        String[] daemonArgs = {"--port", port, "--memory-limit", "256m", "--checkpoint-dir", dir.resolve("ckpt").toString()};
        DaemonProcess d = DaemonProcess.start(daemonArgs);
        try {
            String addr = d.url();
            List<String> cmd = List.of("run", "--addr", addr, "--job", "kept", "--schedule", schedule.toString(), "--",
                    "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/resize_rank.py").toString(), out.toString(),
                    ROOT.resolve("clients/python").toString(), Integer.toString(STEPS), "20");
            List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", Path.of(System.getProperty("user.dir")).resolve("target/tenplex.jar").toString(),
                    "io.tenplex.cli.TenplexCli"));
            java.addAll(cmd);
            Path log = dir.resolve("first.out");
            Process first = new ProcessBuilder(java).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            String change;
            List<ProcessHandle> started;
            try {
                change = awaitLine(log, Pattern.compile("at step 150: change to 1 devices \\(resource change ([^)]+)\\)"),
                        first);
                LiveProcesses.awaitLevel(addr, "kept", 20, 150, "durable", 120); // the job saves on: gen 20 is dropped
                started = first.toHandle().descendants().toList();
                d.close(); // SIGKILL, the change at step 150 still waiting
                assertTrue(first.waitFor(120, TimeUnit.SECONDS), "the launcher ends when its daemon is gone");
                assertNotEquals(0, first.exitValue(), Files.readString(log));
            } finally {
                first.destroyForcibly();
            }
            assertEquals(List.of(), LiveProcesses.awaitExit(started, 60), "processes left behind");
            assertFalse(Files.exists(out.resolve("end-1-0.json")), "the first run never reached the change");

            d = DaemonProcess.start(daemonArgs);
            JsonNode kept = get(addr + "/api/v1/jobs/kept/resources/" + change);
            assertEquals("stopping", kept.path("state").asText(), kept.toString());
            long current = get(addr + "/api/v1/jobs/kept/generations").path("current").asLong();
            assertTrue(current >= 20 && current < 150, "the newest durable generation is back: " + current);

            String again = CliIT.run(cmd.toArray(String[]::new)); // the same command, in this JVM
            System.out.println(again);
            assertTrue(again.contains("job kept has generation " + current + " (saved under (T,P,D)=(1,1,2)): resuming "
                    + "under (T,P,D)=(1,1,2) from it; 0 schedule entries already applied, next at step 150"), again);
            assertTrue(again.contains("resource change " + change + " for step 150 is already waiting on the daemon"),
                    "the kept change followed, not another posted: " + again);
            assertEquals(current, ResizeIT.read(out.resolve("launch-2-0.json")).path("loaded").asLong());
            assertEquals(150, ResizeIT.read(out.resolve("launch-1-0.json")).path("loaded").asLong(), "changed at 150");
            JsonNode end = ResizeIT.read(out.resolve("end-1-0.json"));
            assertEquals(STEPS, end.path("step").asInt());
            for (JsonNode w : end.path("w")) {
                assertEquals(STEPS, w.asDouble(), "every step counted exactly once across the kill: " + end);
            }
            assertEquals("done", get(addr + "/api/v1/jobs/kept/resources/" + change).path("state").asText());
            assertTrue(CliIT.run("jobs", "--addr", addr).lines().anyMatch(l -> l.matches("kept +finished .*")));
        } finally {
            d.close();
        }
    }

    /**
     * A change whose save completed but whose move failed (the daemon's memory budget too small for the
     * new ranks' shards), the daemon restarted on its directory with a larger budget, then the same
     * command: the entry's step is saved and its change did not commit, so it is applied from that
     * generation ({@code recover}, no stop flag raised again) and the ranks run on under the new
     * configuration from it.
     */
    @Test
    @Timeout(300)
    void changeFailedAfterItsSave_theSameCommandAfterARestart_appliesItFromTheSavedGeneration(@TempDir Path dir)
            throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 1, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 1}, {\"step\": 12, \"size\": 2, \"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        String port = DaemonProcess.reservePeers(1).port(0);
        String ckpt = dir.resolve("ckpt").toString();
        DaemonProcess d = DaemonProcess.start("--port", port, "--memory-limit", "100m", "--checkpoint-dir", ckpt);
        try {
            String addr = d.url();
            List<String> cmd = List.of("run", "--addr", addr, "--job", "failed", "--schedule", schedule.toString(), "--",
                    "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/resize_rank.py").toString(), out.toString(),
                    ROOT.resolve("clients/python").toString(), "40");
            List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", Path.of(System.getProperty("user.dir")).resolve("target/tenplex.jar").toString(),
                    "io.tenplex.cli.TenplexCli"));
            java.addAll(cmd);
            Path log = dir.resolve("first.out");
            ProcessBuilder pb = new ProcessBuilder(java).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().put("RESIZE_RANK_ELEMENTS", Integer.toString(8 << 20)); // 64 MiB of float64
            Process first = pb.start();
            try {
                assertTrue(first.waitFor(180, TimeUnit.SECONDS), "the first run ends");
            } finally {
                first.destroyForcibly();
            }
            String said = Files.readString(log);
            assertNotEquals(0, first.exitValue(), said);
            assertTrue(said.contains("the resource change failed"), said);
            LiveProcesses.awaitLevel(addr, "failed", 12, "durable", 120);
            d.close();

            d = DaemonProcess.start("--port", port, "--memory-limit", "1g", "--checkpoint-dir", ckpt);
            String again = CliIT.run(cmd.toArray(String[]::new));
            System.out.println(again);
            assertTrue(again.contains("change to 2 devices as (T,P,D)=(1,1,2): its step is saved but its change did "
                    + "not commit; applying it from that generation"), again);
            assertTrue(again.contains("resuming under (T,P,D)=(1,1,2) from it"), again);
            assertFalse(again.contains("stop flag raised for step 12"), again);
            for (int rank = 0; rank < 2; rank++) {
                assertEquals(12, ResizeIT.read(out.resolve("launch-2-" + rank + ".json")).path("loaded").asLong());
            }
            JsonNode end = ResizeIT.read(out.resolve("end-2-0.json"));
            assertEquals(40, end.path("step").asInt());
            for (JsonNode w : end.path("w")) {
                assertEquals(40, w.asDouble(), "every step counted exactly once: " + end);
            }
        } finally {
            d.close();
        }
    }
}
