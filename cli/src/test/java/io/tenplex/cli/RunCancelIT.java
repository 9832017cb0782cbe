package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tenplex run} that is stopped takes back what it asked of the daemon: a real daemon, the run
 * in its own JVM with a real training process, SIGTERM while the run's resource change waits for the
 * ranks' save. The change ends cancelled, the stop flag is down, the rank is gone, and the same job
 * can take a new change at once. While a change runs, the 409 for another one names {@code tenplex
 * cancel JOB}, which cancels it.
 */
class RunCancelIT {
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();

    private HttpResponse<String> send(String method, String url, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The job's changes, polled until one is in {@code state} (no sleeps for synchronisation: a deadline). */
    private JsonNode awaitChange(String addr, String job, String state) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            HttpResponse<String> r = send("GET", addr + "/api/v1/jobs/" + job + "/resources", null);
            if (r.statusCode() == 200) {
                for (JsonNode c : json.readTree(r.body()).path("changes")) {
                    if (c.path("state").asText().equals(state)) {
                        return c;
                    }
                }
            }
            assertTrue(System.nanoTime() < deadline, "no change of " + job + " became " + state + ": " + r.body());
            LockSupport.parkNanos(20_000_000L);
        }
    }

    private boolean raised(String addr, String job) throws Exception {
        return json.readTree(send("GET", addr + "/api/v1/jobs/" + job + "/stop", null).body()).path("raised").asBoolean();
    }

    @Test
    void sigterm_cancelsTheRunsChange_clearsTheFlag_andEndsTheRanks(@TempDir Path dir) throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            Files.writeString(dir.resolve("schedule.json"), "[{\"step\": 0, \"size\": 1}, {\"step\": 100, \"size\": 2}]");
            Path pid = dir.resolve("rank.pid");
            String rank = "import os, time; open(" + ("'" + pid + "'") + ", 'w').write(str(os.getpid())); time.sleep(600)";
            Path jar = Path.of(System.getProperty("user.dir")).resolve("target/tenplex.jar"); // the packaged command
            Process run = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    jar.toString(), "io.tenplex.cli.TenplexCli", "run", "--addr", addr, "--job",
                    "j", "--schedule", dir.resolve("schedule.json").toString(), "--", "/usr/bin/python3", "-c", rank)
                    .redirectErrorStream(true).redirectOutput(dir.resolve("run.out").toFile()).start();
            // into a file: a pipe read by another thread loses what the process writes as it exits
            java.util.concurrent.Callable<String> printed = () -> Files.readString(dir.resolve("run.out"));
            try {
                JsonNode change = awaitChange(addr, "j", "stopping");
                assertTrue(raised(addr, "j"), "the change raised the flag");
                HttpResponse<String> again = send("POST", addr + "/api/v1/jobs/j/resources",
                        "{\"size\": 1, \"devicesPerWorker\": 1}");
                assertEquals(409, again.statusCode(), again.body());
                assertTrue(again.body().contains("tenplex cancel j"), again.body());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.exists(pid) || Files.readString(pid).isEmpty()) {
                    assertTrue(System.nanoTime() < deadline, "the rank did not start");
                    LockSupport.parkNanos(20_000_000L);
                }
                long rankPid = Long.parseLong(Files.readString(pid).strip());
                while (!printed.call().contains("s stop flag raised for step 100")) { // while the rank still runs
                    assertTrue(System.nanoTime() < deadline, "the change's events are printed as they happen: "
                            + printed.call());
                    LockSupport.parkNanos(20_000_000L);
                }

                String during = CliIT.run("jobs", "--addr", addr);
                assertTrue(during.lines().anyMatch(l -> l.matches("j +stopping .*resource change " + change.path("id")
                        .asText())), during);

                run.destroy(); // SIGTERM
                assertTrue(run.waitFor(60, TimeUnit.SECONDS), "tenplex run ended");
                String out = printed.call();
                assertTrue(out.contains("tenplex run: stopped; cancelled resource change " + change.path("id").asText()
                        + " of job j"), out);
                JsonNode status = json.readTree(send("GET", addr + change.path("status").asText() + "?wait=true", null)
                        .body());
                assertEquals("cancelled", status.path("state").asText(), status.toString());
                assertFalse(raised(addr, "j"), "the stop flag is down");
                String after = CliIT.run("jobs", "--addr", addr);
                assertTrue(after.lines().anyMatch(l -> l.matches("j +cancelled .* tenplex run was stopped by a signal "
                        + "\\(SIGINT or SIGTERM\\)")), after);
                assertFalse(ProcessHandle.of(rankPid).map(ProcessHandle::isAlive).orElse(false), "the rank ended");
                HttpResponse<String> next = send("POST", addr + "/api/v1/jobs/j/resources",
                        "{\"size\": 1, \"devicesPerWorker\": 1, \"atStep\": 5}");
                assertEquals(202, next.statusCode(), "the job takes a new change at once: " + next.body());
                String cancelled = CliIT.run("cancel", "--addr", addr, "j");
                assertTrue(cancelled.contains("cancelled resource change " + json.readTree(next.body()).path("id").asText()),
                        cancelled);
                assertFalse(raised(addr, "j"), "tenplex cancel took the flag down too");
                assertTrue(CliIT.run("cancel", "--addr", addr, "j").contains("job j has no resource change to cancel"));
            } finally {
                run.destroyForcibly();
                run.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }
}
