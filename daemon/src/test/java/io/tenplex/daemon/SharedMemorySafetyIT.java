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
 * given back, and the daemon lives; so is a segment beyond the daemon's file descriptors (each segment is
 * a memory file it holds open: its {@code RLIMIT_NOFILE} lowered with {@code prlimit --pid}), the store
 * unchanged by the refusal and the daemon serving, and saving through shared memory again once the
 * limit is back.
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

    @Test
    void segmentsBeyondTheDescriptorLimit_areRefusedWith507_storeUnchanged_andTheDaemonServes() throws Exception {
        daemon = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--shm-dir", shm.toString());
        // one connection, opened before the limit is lowered: every request below goes over it
        HttpClient one = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        String small = "{\"tensors\":[{\"path\":\"w.numpy.ndarray\",\"dtype\":\"f32\",\"shape\":[1000]}]}";
        long baseline = usedBytes(one);
        String pid = Long.toString(daemon.pid());
        String limits = Files.readAllLines(Path.of("/proc", pid, "limits")).stream()
                .filter(l -> l.startsWith("Max open files")).findFirst().orElseThrow();
        String[] soft = limits.replace("Max open files", "").trim().split("\\s+");
        long open;
        try (var fds = Files.list(Path.of("/proc", pid, "fd"))) {
            open = fds.count();
        }
        // each segment is a memory file the daemon holds open: descriptors run out long before its 64 MiB
        run("prlimit", "--pid", pid, "--nofile=" + (open + 8) + ":" + soft[1]);
        List<String> held = new java.util.ArrayList<>();
        HttpResponse<String> refused = null;
        long usedBefore = usedBytes(one);
        try {
            for (int i = 0; i < 40 && refused == null; i++) {
                HttpResponse<String> r = send(one, "POST", "/api/v1/jobs/k/shared/saves/0", small);
                if (r.statusCode() == 201) {
                    held.add(r.body().replaceAll(".*\"id\":\"([0-9a-f]+)\".*", "$1"));
                    usedBefore = usedBytes(one);
                } else {
                    refused = r;
                }
            }
            assertTrue(refused != null, held.size() + " segments reserved under a limit of " + (open + 8) + " descriptors");
            assertEquals(507, refused.statusCode(), "after " + held.size() + " segments: " + refused.body() + "\ndaemon log:\n"
                    + String.join("\n", daemon.log()));
            assertEquals("insufficient_storage", refused.headers().firstValue("X-Tenplex-Error-Code").orElse(""),
                    refused.body());
            // the refusal changed nothing: the reservations held are open, their bytes (only) counted
            assertEquals(usedBefore, usedBytes(one));
            String shared = send(one, "GET", "/api/v1/jobs/k/shared", null).body();
            assertEquals(held.size(), shared.split("\"id\":").length - 1, shared);
            assertEquals(200, send(one, "GET", "/api/v1/health", null).statusCode()); // it serves, still limited
        } finally {
            run("prlimit", "--pid", pid, "--nofile=" + soft[0] + ":" + soft[1]);
        }
        for (String id : held) {
            assertEquals(200, send(one, "DELETE", "/api/v1/jobs/k/shared/" + id, null).statusCode());
        }
        assertEquals(200, get("/api/v1/health").statusCode()); // a new connection
        HttpResponse<String> again = post("/api/v1/jobs/k/shared/saves/0", small);
        assertEquals(201, again.statusCode(), again.body());
        assertEquals(200, send(one, "DELETE", "/api/v1/jobs/k/shared/" + again.body().replaceAll(
                ".*\"id\":\"([0-9a-f]+)\".*", "$1"), null).statusCode());
        assertEquals(baseline, usedBytes(one));
    }

    private long usedBytes(HttpClient c) throws IOException, InterruptedException {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^tenplex_store_used_bytes (\\S+)$")
                .matcher(send(c, "GET", "/metrics", null).body());
        assertTrue(m.find(), "no tenplex_store_used_bytes");
        return (long) Double.parseDouble(m.group(1));
    }

    private HttpResponse<String> send(HttpClient c, String method, String path, String body)
            throws IOException, InterruptedException {
        return c.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
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
