package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No client of shared memory can crash the daemon: real tenplexd processes, a real 8 MiB tmpfs as
 * {@code --shm-dir} (as small as docker's default {@code /dev/shm} is, relatively), and a real Python
 * trainer (tests/python/test_shared_memory_safety.py says what it checks: segment names taken by
 * another user, segments truncated before the commit and before a checksummed range read, the tmpfs
 * full at the commit, memory kept for reuse neither counted as used nor refusing a save). Also: a
 * segment the system cannot allocate is refused at the reservation with 507 once kept segments were
 * given back, and the daemon lives.
 */
class SharedMemorySafetyIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private DaemonProcess daemon;

    @TempDir
    Path shm;

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
    }

    @Test
    void truncatedSegments_fullTmpfs_takenNames_keptMemory_neverCrashTheDaemon() throws Exception {
        run("mount", "-t", "tmpfs", "-o", "size=8m,mode=1777", "tmpfs", shm.toString());
        try {
            daemon = DaemonProcess.start("--port", "0", "--memory-limit", "96m", "--shm-dir", shm.toString());
            ProcessBuilder py = new ProcessBuilder("/usr/bin/python3",
                    ROOT.resolve("tests/python/test_shared_memory_safety.py").toString()).redirectErrorStream(true);
            py.environment().put("TENPLEX_ADDR", daemon.url());
            py.environment().put("TENPLEX_SHM_DIR", shm.toString());
            py.environment().put("TENPLEX_DAEMON_PID", Long.toString(daemon.pid()));
            Process p = py.start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), output + "\ndaemon log:\n" + String.join("\n", daemon.log()));
            assertTrue(output.strip().endsWith("OK"), output);
            assertEquals(200, get("/metrics").statusCode()); // still answering
        } finally {
            if (daemon != null) {
                daemon.close();
            }
            run("umount", shm.toString());
        }
    }

    @Test
    void segmentTheSystemCannotAllocate_is507_andTheDaemonLives() throws Exception {
        // files of at most 2 MiB for the daemon's process: a 4 MiB segment cannot be sized or allocated
        daemon = DaemonProcess.startUnder(List.of("prlimit", "--fsize=" + (2 << 20), "--"), "--port", "0",
                "--memory-limit", "64m", "--shm-dir", shm.toString());
        String small = "{\"tensors\":[{\"path\":\"w.numpy.ndarray\",\"dtype\":\"f32\",\"shape\":[1000]}]}";
        HttpResponse<String> kept = post("/api/v1/jobs/k/shared/saves/0", small); // 1 MiB fits
        assertEquals(201, kept.statusCode(), kept.body());
        String id = kept.body().replaceAll(".*\"id\":\"([0-9a-f]+)\".*", "$1");
        assertEquals(200, HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(daemon.url()
                + "/api/v1/jobs/k/shared/" + id)).DELETE().build(), HttpResponse.BodyHandlers.discarding()).statusCode());
        assertTrue(get("/api/v1/jobs/k/shared").body().contains("\"keptBytes\":1048576"), get("/api/v1/jobs/k/shared").body());
        String reserve = "{\"tensors\":[{\"path\":\"w.numpy.ndarray\",\"dtype\":\"f32\",\"shape\":[1048576]}]}";
        HttpResponse<String> r = post("/api/v1/jobs/k/shared/saves/0", reserve);
        assertEquals(507, r.statusCode(), r.body());
        assertEquals("insufficient_storage", r.headers().firstValue("X-Tenplex-Error-Code").orElse(""), r.body());
        assertTrue(r.body().contains("5242880 bytes"), r.body());
        // the kept segment was given back before the refusal
        assertTrue(get("/api/v1/jobs/k/shared").body().contains("\"keptBytes\":0"), get("/api/v1/jobs/k/shared").body());
        assertEquals(201, post("/api/v1/jobs/k/shared/saves/0", small).statusCode()); // it lives
        assertTrue(get("/api/v1/jobs/k/shared").body().contains("\"liveSegments\":1"));
        try (var files = Files.list(shm)) {
            assertEquals(0, files.count()); // nothing is made in the directory
        }
    }

    private HttpResponse<String> post(String path, String body) throws IOException, InterruptedException {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(daemon.url() + path))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + ": " + out);
    }
}
