package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The durable tier at its limits, with real daemon processes: steps of 19 digits (a step from
 * {@code time.time_ns()}) restored and retained; a second daemon refused a directory a live one holds,
 * and taking it once that one is killed; a full disk (a real small tmpfs) that makes room from the
 * oldest durable generation and never removes the newest, and refuses (507) a resource change or stop
 * flag it cannot keep; a damaged manifest (out-of-range fields, a
 * FIFO) that costs its generation, not the daemon's start.
 */
class DurableLimitsIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final long MIB = 1 << 20;
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private final List<DaemonProcess> daemons = new ArrayList<>();
    private DaemonProcess daemon;
    @TempDir
    Path dir;

    private DaemonProcess start(Path checkpoints) throws Exception {
        daemon = DaemonProcess.start("--port", "0", "--memory-limit", "256m", "--checkpoint-dir", checkpoints.toString());
        daemons.add(daemon);
        return daemon;
    }

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
        // a daemon whose start never reported ready (e.g. blocked at start) is a child of this JVM on dir
        List<ProcessHandle> stuck = ProcessHandle.current().children().filter(p -> p.info().arguments()
                .map(a -> List.of(a).contains(dir.toString()) || List.of(a).contains(dir.resolve("small").toString()))
                .orElse(false)).toList();
        for (ProcessHandle p : stuck) {
            p.destroyForcibly();
            p.onExit().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void stepsOf19Digits_areRestoredAfterARestart_andRetentionRemovesTheOldest() throws Exception {
        long s1 = System.currentTimeMillis() * 1_000_000L; // as time.time_ns(): above 10^18
        long s2 = s1 + 1_000;
        long s3 = s2 + 1_000;
        assertTrue(s1 >= 1_000_000_000_000_000_000L);
        start(dir);
        for (long s : List.of(s1, s2, s3)) {
            python("save", "ns", "1", Long.toString(s));
            daemon.awaitLine("durable flush job=ns step=" + s, 60);
        }
        Path job = dir.resolve("jobs/ns");
        daemon.awaitLine("durable flush job=ns step=" + s3, 60);
        assertTrue(Files.exists(job.resolve(s3 + "/manifest.json")));
        assertTrue(Files.exists(job.resolve(s2 + "/manifest.json")));
        assertFalse(Files.exists(job.resolve(Long.toString(s1))), "durableKeep 2: the oldest is removed");
        assertEquals(137, daemon.signal("KILL"));

        start(dir);
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("restored durable generation job=ns step=" + s3)),
                String.join("\n", daemon.log()));
        python("check", "ns", "1", Long.toString(s3));
    }

    @Test
    void secondDaemonOnTheSameDirectory_exits2NamingTheLock_untilTheFirstIsKilled() throws Exception {
        DaemonProcess first = start(dir);
        Path lock = dir.resolve("tenplexd.lock");
        Process second = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), Tenplexd.class.getName(), "--port", "0", "--memory-limit", "64m",
                "--checkpoint-dir", dir.toString()).redirectErrorStream(true).start();
        try {
            boolean ended = second.waitFor(60, TimeUnit.SECONDS);
            assertTrue(ended, "the second daemon started on a directory the first holds");
            String out = new String(second.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(2, second.exitValue(), out);
            assertTrue(out.contains(lock.toString()) && out.contains("pid " + first.pid()), out);
            assertFalse(out.contains("ready on"), out);
        } finally {
            second.destroyForcibly().waitFor();
        }
        python("save", "one", "1", "10");
        first.awaitLine("durable flush job=one step=10", 60);
        assertEquals(137, first.signal("KILL")); // the OS releases its lock: no clean shutdown needed

        start(dir);
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("restored durable generation job=one step=10")),
                String.join("\n", daemon.log()));
        python("check", "one", "1", "10");
    }

    /**
     * An 8 MiB tmpfs and generations of 3 MiB whose every block changes: the third flush finds the disk
     * full, removes the oldest durable generation and is written; so is the fourth. A 12 MiB generation
     * cannot fit: its flush fails, the newest durable generation (40) stays, and the failure shows in
     * {@code /metrics}, in the generation's status and, after a restart, in the log.
     */
    @Test
    void fullDisk_makesRoomFromTheOldestGeneration_neverTheNewest_andSaysSo() throws Exception {
        Path small = Files.createDirectories(dir.resolve("small"));
        mount(small, "8m");
        try {
            start(small);
            for (int step : List.of(10, 20, 30, 40)) {
                python("save", "full", "3", Integer.toString(step));
                daemon.awaitLine("durable flush job=full step=" + step, 60);
            }
            Path job = small.resolve("jobs/full");
            assertTrue(Files.exists(job.resolve("30/manifest.json")) && Files.exists(job.resolve("40/manifest.json")));
            assertFalse(Files.exists(job.resolve("10")) || Files.exists(job.resolve("20")));
            assertTrue(daemon.log().stream().anyMatch(l -> l.contains("no space left") && l.contains("step=10")),
                    String.join("\n", daemon.log()));
            assertEquals(1, generation("full", 40).path("levelDetails").path("durable").path("evicted").asLong());
            Map<String, PromText.Family> m = metrics();
            assertEquals(4, sample(m, "tenplex_durable_flushes", "full", "written"));
            assertEquals(0, sample(m, "tenplex_durable_flushes", "full", "no_space"));
            String evicted = "tenplex_durable_evicted_generations_total";
            assertEquals(2, m.get(evicted).sum(evicted, Map.of("job", "full")));
            assertTrue(m.get("tenplex_durable_written_bytes_total").sum("tenplex_durable_written_bytes_total",
                    Map.of("job", "full")) >= 4 * 3 * MIB);
            assertEquals(40, m.get("tenplex_durable_newest_step").sum("tenplex_durable_newest_step",
                    Map.of("job", "full")));

            python("save", "full", "12", "50"); // larger than the whole file system
            daemon.awaitLine("durable flush FAILED: job=full step=50", 60);
            JsonNode failed = generation("full", 50);
            assertFalse(failed.path("levels").toString().contains("durable"), failed.toString());
            JsonNode why = failed.path("levelDetails").path("durableFailed");
            assertEquals(1, why.path("noSpace").asLong(), failed.toString());
            assertEquals(40, why.path("newestDurableStep").asLong(), failed.toString());
            assertEquals(1, why.path("evicted").asLong(), failed.toString());
            m = metrics();
            assertEquals(1, sample(m, "tenplex_durable_flushes", "full", "no_space"));
            assertEquals(40, m.get("tenplex_durable_newest_step").sum("tenplex_durable_newest_step",
                    Map.of("job", "full")));
            assertTrue(Files.exists(job.resolve("40/manifest.json")), "the newest durable generation is never removed");
            assertFalse(Files.exists(job.resolve("50")), "the failed flush leaves nothing behind");
            changeRefusedOnAFullDisk(small);
            assertEquals(137, daemon.signal("KILL"));

            start(small);
            assertTrue(daemon.log().stream().anyMatch(l -> l.contains("step=50 completed before the restart but was "
                    + "NOT flushed") && l.contains("resumes from step 40")), String.join("\n", daemon.log()));
            python("check", "full", "3", "40");
        } finally {
            for (DaemonProcess d : daemons) {
                d.close(); // before the unmount: a running daemon keeps it busy
            }
            umount(small);
        }
    }

    @Test
    void outOfRangeManifestFields_costTheirGenerationNotTheDaemon() throws Exception {
        saveTwoGenerations("good", "bad");
        Path bad = dir.resolve("jobs/bad/20/manifest.json");
        ObjectNode m = (ObjectNode) json.readTree(bad.toFile());
        m.put("durableKeep", 5000);
        json.writeValue(bad.toFile(), m);
        restartServingOlder(bad);

        m.put("durableKeep", 2);
        ((ObjectNode) m.path("levels")).put("partners", -1);
        json.writeValue(bad.toFile(), m);
        restartServingOlder(bad);
    }

    @Test
    @Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aFifoWhereAManifestShouldBe_isNotOpened_andTheStartGoesOn() throws Exception {
        saveTwoGenerations("good", "fifo");
        Path fifo = dir.resolve("jobs/fifo/20/manifest.json");
        Files.delete(fifo);
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor());
        start(dir); // reading the FIFO would block the start for good
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains(fifo.toString()) && l.contains("not a regular file")),
                String.join("\n", daemon.log()));
        python("check", "fifo", "1", "10");
        python("check", "good", "1", "20");
    }

    /** Saves and flushes generations 10 and 20 of each job, then kills the daemon. */
    private void saveTwoGenerations(String... jobs) throws Exception {
        start(dir);
        for (String job : jobs) {
            for (int step : List.of(10, 20)) {
                python("save", job, "1", Integer.toString(step));
                daemon.awaitLine("durable flush job=" + job + " step=" + step, 60);
            }
        }
        assertEquals(137, daemon.signal("KILL"));
    }

    /** Starts the daemon on {@code dir}: job bad's generation 20 ({@code manifest}) is damaged and named, 10 served. */
    private void restartServingOlder(Path manifest) throws Exception {
        start(dir);
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("DAMAGED") && l.contains(manifest.toString())),
                String.join("\n", daemon.log()));
        python("check", "bad", "1", "10");
        python("check", "good", "1", "20");
        assertEquals(137, daemon.signal("KILL"));
    }

    /**
     * With the checkpoint directory's disk filled, a resource change and a stop flag cannot be kept
     * there: both are refused with 507 before anything is raised; with room again they are taken.
     */
    private void changeRefusedOnAFullDisk(Path small) throws Exception {
        Path filler = small.resolve("filler");
        try (var ch = java.nio.channels.FileChannel.open(filler, java.nio.file.StandardOpenOption.CREATE_NEW,
                java.nio.file.StandardOpenOption.WRITE)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(64 << 10);
            while (true) {
                b.clear();
                ch.write(b); // until the file system is full
            }
        } catch (IOException full) {
            assertTrue(String.valueOf(full.getMessage()).contains("No space left"), full.toString());
        }
        String change = "{\"size\": 1, \"devicesPerWorker\": 1, \"atStep\": 60, \"config\": {\"tp\": 1, \"pp\": 1, "
                + "\"dp\": 1}}";
        for (String[] post : new String[][] {{"/api/v1/jobs/full/resources", change},
                {"/api/v1/jobs/full/stop", "{\"atStep\": 60, \"reason\": \"full disk\"}"}}) {
            var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + post[0])).POST(HttpRequest.BodyPublishers
                    .ofString(post[1])).build(), BodyHandlers.ofString());
            assertEquals(507, r.statusCode(), post[0] + ": " + r.body());
            assertTrue(r.body().contains("no space left") && r.body().contains("nothing was raised"), r.body());
        }
        assertEquals(0, get("/api/v1/jobs/full/resources").path("changes").size(), "nothing started");
        assertFalse(get("/api/v1/jobs/full/stop").path("raised").asBoolean(), "nothing raised");
        Files.delete(filler);
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/full/stop")).POST(HttpRequest
                .BodyPublishers.ofString("{\"atStep\": 60, \"reason\": \"room again\"}")).build(), BodyHandlers.ofString());
        assertEquals(2, r.statusCode() / 100, r.body());
        assertTrue(Files.exists(small.resolve("changes/full/stop.json")), "kept once there is room");
        http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/full/stop")).DELETE().build(),
                BodyHandlers.ofString());
        assertFalse(Files.exists(small.resolve("changes/full/stop.json")), "cleared: no longer kept");
    }

    private JsonNode generation(String job, long step) throws Exception {
        for (JsonNode g : get("/api/v1/jobs/" + job + "/generations").path("generations")) {
            if (g.path("step").asLong() == step) {
                return g;
            }
        }
        throw new AssertionError("no generation " + step + " of job " + job);
    }

    private Map<String, PromText.Family> metrics() throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/metrics")).build(), BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return PromText.parse(r.body());
    }

    private static double sample(Map<String, PromText.Family> m, String family, String job, String outcome) {
        PromText.Family f = m.get(family + "_total");
        assertTrue(f != null, "no family " + family + " in " + m.keySet());
        return f.sum(family + "_total", Map.of("job", job, "outcome", outcome));
    }

    private JsonNode get(String path) throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).build(), BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return json.readTree(r.body());
    }

    private void python(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3",
                ROOT.resolve("tests/python/durable_limits.py").toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder py = new ProcessBuilder(cmd).redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDR", daemon.url());
        Process p = py.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), output + "\n" + String.join("\n", daemon.log()));
        assertTrue(output.strip().endsWith("OK"), output);
    }

    private static void mount(Path at, String size) throws Exception {
        run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", at.toString());
    }

    private static void umount(Path at) throws Exception {
        run("umount", at.toString());
    }

    private static void run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + ": " + out);
    }
}
