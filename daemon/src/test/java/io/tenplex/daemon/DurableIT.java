package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * L4 with real daemon processes: a daemon killed with SIGKILL and started again on its checkpoint
 * directory serves the last complete generation bit for bit, never a half-flushed or damaged one, and
 * reports every damaged one lost (also when none is left);
 * the differential flush writes exactly the blocks whose CRC32C changed.
 */
class DurableIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final String JOB = "dur";
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private DaemonProcess daemon;
    @TempDir
    Path dir;

    private void start() throws Exception {
        start("256m");
    }

    private void start(String memory) throws Exception {
        daemon = DaemonProcess.start("--port", "0", "--memory-limit", memory, "--checkpoint-dir", dir.toString());
    }

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
    }

    @Test
    void killedDaemon_restartsOnItsDirectory_andServesTheLastIntactGenerationBitForBit() throws Exception {
        start();
        python("save");
        daemon.awaitLine("durable flush job=dur step=20", 60);
        python("check", "20");
        assertEquals(137, daemon.signal("KILL"));

        Path half = Files.createDirectories(dir.resolve("jobs/dur/30")); // a flush cut short: no manifest
        Files.copy(dir.resolve("jobs/dur/20/blocks.pack"), half.resolve("blocks.pack"));
        start();
        List<String> log = daemon.log();
        assertTrue(indexOf(log, "restored durable generation job=dur step=20") < indexOf(log, "ready on"),
                String.join("\n", log));
        python("check", "20");
        assertEquals(20, get("/api/v1/jobs/" + JOB + "/load/0").path("step").asLong());
        assertTrue(get("/api/v1/dirs/job/" + JOB + "/generations/20/0?recursive=true").path("entries").size() >= 4,
                "what tenplex ls lists");
        assertFalse(Files.exists(half), "a generation directory without its manifest is removed at start");
        assertEquals(137, daemon.signal("KILL"));

        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("jobs/dur/20/blocks.pack").toFile(), "rw")) {
            f.setLength(f.length() - 1000); // generation 20 damaged: its pack is short
        }
        start();
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("DAMAGED") && l.contains("step=20")),
                String.join("\n", daemon.log()));
        python("check", "10");
        assertEquals(137, daemon.signal("KILL"));

        Files.writeString(dir.resolve("jobs/dur/10/manifest.json"), "{\"format\": \"tenpl"); // the last intact one cut short
        start();
        // nothing of the job is left on this daemon, and its generations' status still says what it lost and why
        JsonNode generations = getOrNull("/api/v1/jobs/" + JOB + "/generations");
        assertTrue(generations != null, "GET .../generations answered 404 for a job whose every generation was lost:\n"
                + String.join("\n", daemon.log()));
        for (long step : List.of(10L, 20L)) {
            JsonNode g = null;
            for (JsonNode e : generations.path("generations")) {
                g = e.path("step").asLong() == step ? e : g;
            }
            assertTrue(g != null && g.path("lost").asText().contains("durable copy damaged"), step + ": " + generations);
        }
        assertEquals(404, http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/" + JOB + "/load/0"))
                .build(), BodyHandlers.ofString()).statusCode(), "nothing to load");
    }

    /**
     * A real crash in the middle of a flush: generation 30 (384 MiB) is being written when the daemon
     * is killed with SIGKILL (the test watches the directory: the generation's directory is there, its
     * manifest is not).
     * Started again, the daemon removes the half-written generation and serves generation 20 bit for bit.
     */
    @Test
    void killedInTheMiddleOfAFlush_neverServesTheHalfWrittenGeneration() throws Exception {
        start("1g");
        python("save");
        daemon.awaitLine("durable flush job=dur step=20", 60);
        Path gen = dir.resolve("jobs/dur/30");
        Process saving = pythonProcess("savebig", "30", "384");
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!Files.isDirectory(gen)) { // the flush has begun: its directory is made first
            assertFalse(Files.exists(gen.resolve("manifest.json")), "the flush ended before it was seen");
            assertTrue(System.nanoTime() < deadline && (saving.isAlive() || Files.exists(gen)),
                    () -> output(saving)); // the message only when it fails: reading it waits for the process
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L); // watching another process's files
        }
        assertEquals(137, daemon.signal("KILL"));
        saving.waitFor(); // its last request may have been cut by the kill
        assertFalse(Files.exists(gen.resolve("manifest.json")), "killed after the flush ended: not mid-flush");

        start("1g");
        python("check", "20");
        assertFalse(Files.exists(gen), "the half-written generation is removed at start");
        assertTrue(daemon.log().stream().noneMatch(l -> l.contains("step=30") && l.contains("restored")),
                String.join("\n", daemon.log()));
    }

    @Test
    void differentialFlush_writesExactlyTheChangedBlocks() throws Exception {
        start();
        python("save");
        daemon.awaitLine("durable flush job=dur step=20", 60);
        JsonNode frozen = flush(20);
        assertEquals(changedBytes(10, 20), frozen.path("bytesWritten").asLong(), frozen.toString());
        assertTrue(frozen.path("bytesWritten").asLong() < frozen.path("logicalBytes").asLong() / 2, frozen.toString());

        python("saveall");
        daemon.awaitLine("durable flush job=dur step=30", 60);
        JsonNode all = flush(30);
        assertEquals(changedBytes(20, 30), all.path("bytesWritten").asLong(), all.toString());
        assertTrue(all.path("bytesWritten").asLong() > all.path("logicalBytes").asLong() * 99 / 100, all.toString());
    }

    /** The durable flush of {@code step} as the generation's status reports it. */
    private JsonNode flush(long step) throws Exception {
        for (JsonNode g : get("/api/v1/jobs/" + JOB + "/generations").path("generations")) {
            if (g.path("step").asLong() == step) {
                assertTrue(g.path("levels").toString().contains("durable"), g.toString());
                return g.path("levelDetails").path("durable");
            }
        }
        throw new AssertionError("no generation " + step);
    }

    /** Bytes of the blocks of rank 0's entries in {@code step} whose CRC32C differs from {@code before}'s. */
    private long changedBytes(long before, long step) throws Exception {
        String base = "/job/" + JOB + "/generations/";
        long changed = 0;
        for (JsonNode e : get("/api/v1/dirs" + base + step + "/0?recursive=true").path("entries")) {
            String rel = e.path("path").asText().substring((base + step + "/0").length());
            JsonNode now = get("/api/v1/checksums" + base + step + "/0" + rel);
            JsonNode old = getOrNull("/api/v1/checksums" + base + before + "/0" + rel);
            for (int i = 0; i < now.path("blocks").size(); i++) {
                long len = Math.min(now.path("blockSize").asLong(), now.path("size").asLong()
                        - i * now.path("blockSize").asLong());
                boolean same = old != null && old.path("size").asLong() == now.path("size").asLong()
                        && old.path("blocks").path(i).asText().equals(now.path("blocks").path(i).asText());
                changed += same ? 0 : len;
            }
        }
        return changed;
    }

    private JsonNode get(String path) throws Exception {
        JsonNode n = getOrNull(path);
        if (n == null) {
            throw new AssertionError("GET " + path + " found nothing");
        }
        return n;
    }

    private JsonNode getOrNull(String path) throws Exception {
        var r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).build(), BodyHandlers.ofString());
        if (r.statusCode() == 404) {
            return null;
        }
        assertEquals(200, r.statusCode(), r.body());
        return json.readTree(r.body());
    }

    private static int indexOf(List<String> log, String text) {
        for (int i = 0; i < log.size(); i++) {
            if (log.get(i).contains(text)) {
                return i;
            }
        }
        throw new AssertionError("no log line with '" + text + "':\n" + String.join("\n", log));
    }

    private void python(String... args) throws Exception {
        Process p = pythonProcess(args);
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), output + "\n" + String.join("\n", daemon.log()));
        assertTrue(output.strip().endsWith("OK"), output);
    }

    private static String output(Process p) {
        try {
            return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }

    private Process pythonProcess(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("/usr/bin/python3",
                ROOT.resolve("tests/python/test_durable.py").toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder py = new ProcessBuilder(cmd).redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDR", daemon.url());
        return py.start();
    }
}
