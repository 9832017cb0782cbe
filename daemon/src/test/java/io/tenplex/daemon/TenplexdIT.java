package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The real daemon process on an ephemeral loopback port: the prototype's Python client forms
 * replayed with Debian's numpy and requests, the token, a clear CLI error, and graceful SIGTERM.
 */
class TenplexdIT {
    private static final Pattern READY = Pattern.compile("ready on http://([\\d.]+):(\\d+)");
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final List<String> log = new ArrayList<>();
    private Process daemon;
    private Thread drain;

    private String start(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), Tenplexd.class.getName()));
        cmd.addAll(List.of(args));
        daemon = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(daemon.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null) {
            log.add(line);
            Matcher m = READY.matcher(line);
            if (m.find()) {
                drain = new Thread(() -> out.lines().forEach(this::keep), "daemon-log");
                drain.setDaemon(true);
                drain.start();
                return "http://" + m.group(1) + ":" + m.group(2);
            }
        }
        throw new AssertionError("daemon exited before it was ready:\n" + String.join("\n", log));
    }

    private synchronized void keep(String line) {
        log.add(line);
    }

    @AfterEach
    void stop() throws Exception {
        if (daemon != null && daemon.isAlive()) {
            daemon.destroyForcibly().waitFor();
        }
    }

    private int stopGracefully() throws Exception {
        // SIGTERM by PID to the process we started (Process.destroy would also close our end of its output)
        assertEquals(0, new ProcessBuilder("kill", "-TERM", Long.toString(daemon.pid())).start().waitFor());
        assertTrue(daemon.waitFor(30, TimeUnit.SECONDS));
        drain.join(); // the log is complete once the pipe reaches end of file
        return daemon.exitValue();
    }

    @Test
    void pythonClientForms_replayByteForByte() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/test_compat.py").toString())
                .redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDR", addr);
        Process p = py.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), output);
        assertTrue(output.contains("OK"), output);
        assertEquals(143, stopGracefully()); // 128 + SIGTERM, after the shutdown hook ran
        synchronized (this) {
            assertTrue(log.stream().anyMatch(l -> l.contains("stopped (released 0 bytes)")), String.join("\n", log));
            assertTrue(log.stream().filter(l -> l.contains("tenplexd starting:")).count() == 1);
        }
    }

    @Test
    void token_guardsEverythingButHealth() throws Exception {
        String addr = start("--port", "0", "--token", "abc", "--memory-limit", "64m");
        HttpClient http = HttpClient.newHttpClient();
        assertEquals(200, http.send(HttpRequest.newBuilder(URI.create(addr + "/api/v1/health")).build(),
                BodyHandlers.discarding()).statusCode());
        assertEquals(401, http.send(HttpRequest.newBuilder(URI.create(addr + "/query?path=/x")).build(),
                BodyHandlers.discarding()).statusCode());
        assertEquals(404, http.send(HttpRequest.newBuilder(URI.create(addr + "/query?path=/x"))
                .header("Authorization", "Bearer abc").build(), BodyHandlers.discarding()).statusCode());
        stopGracefully();
    }

    @Test
    void badOption_isAClearCliError() throws Exception {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), Tenplexd.class.getName(), "--memory-limit", "banana")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(2, p.waitFor());
        assertTrue(out.contains("tenplexd: memory limit 'banana' is not a size"), out);
        assertTrue(new File(ROOT.toFile(), "bin/tenplexd").canExecute());
    }
}
