package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The processes of {@link LiveChaosIT}: Python scripts, {@code tenplex run} as a process of its own (so
 * that it can be SIGKILLed), the processes a run leaves behind, a FUSE mount whose daemon was killed.
 * Every process here is ended only by the handle it was started or found with.
 */
final class LiveProcesses {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private LiveProcesses() {
    }

    /** Runs {@code /usr/bin/python3 args...} in {@code dir}; its output (it must exit 0). */
    static String python(Path dir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    /** Lazily unmounts {@code mnt} (a FUSE mount whose daemon was killed); nothing when nothing is mounted there. */
    static void unmount(Path mnt) throws Exception {
        new ProcessBuilder("umount", "-l", mnt.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
    }

    /** A {@code tenplex run} process (the shaded jar built by the package phase); its output goes to {@code log}. */
    static Launcher launcher(List<String> args, Path log) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-cp", Path.of(System.getProperty("user.dir")).getParent().resolve("cli/target/tenplex.jar").toString(),
                "io.tenplex.cli.TenplexCli"));
        cmd.addAll(args);
        return new Launcher(new ProcessBuilder(cmd).redirectErrorStream(true).start(), log);
    }

    /** A launcher process and the lines it (and the ranks, which share its output) printed, also kept in a file. */
    static final class Launcher {
        final Process process;
        private final List<String> lines = new ArrayList<>();
        private final Thread drain;

        private Launcher(Process process, Path log) throws IOException {
            this.process = process;
            Writer file = Files.newBufferedWriter(log);
            BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            drain = new Thread(() -> {
                try (file) {
                    for (String l; (l = out.readLine()) != null; ) {
                        file.write(l + "\n");
                        file.flush();
                        keep(l);
                    }
                } catch (IOException e) {
                    keep("(output ended: " + e + ")");
                }
            }, "launcher-output");
            drain.setDaemon(true);
            drain.start();
        }

        private synchronized void keep(String line) {
            System.out.println(line);
            lines.add(line);
            notifyAll();
        }

        /** Waits (up to {@code seconds}) for a line containing {@code text}; the line. */
        synchronized String awaitLine(String text, long seconds) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            for (int seen = 0; ; ) {
                for (; seen < lines.size(); seen++) {
                    if (lines.get(seen).contains(text)) {
                        return lines.get(seen);
                    }
                }
                long left = end - System.nanoTime();
                if (left <= 0 || !process.isAlive() && !drain.isAlive()) {
                    throw new AssertionError("no line with '" + text + "' within " + seconds + " s:\n" + String.join("\n", lines));
                }
                TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.SECONDS.toNanos(1)));
            }
        }

        /** Every line printed so far, once the output of the launcher itself has ended or 10 s passed. */
        synchronized List<String> lines() throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (drain.isAlive() && System.nanoTime() < end) {
                TimeUnit.MILLISECONDS.timedWait(this, 100);
            }
            return List.copyOf(lines);
        }

        /** Ends the launcher and whatever it started that still runs (cleanup after a failed assertion). */
        void endAll() {
            process.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
    }

    /**
     * Waits up to {@code seconds} for every process of {@code handles} to exit; those still running then,
     * as {@code pid command line} (they are ended, so that no test leaves them behind).
     */
    static List<String> awaitExit(List<ProcessHandle> handles, long seconds) throws Exception {
        try {
            CompletableFuture.allOf(handles.stream().map(ProcessHandle::onExit).toArray(CompletableFuture[]::new))
                    .get(seconds, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // named below
        }
        List<String> left = handles.stream().filter(ProcessHandle::isAlive).map(h -> h.pid() + " " + h.info()
                .commandLine().orElse("?")).toList();
        handles.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
        return left;
    }

    /** Waits (up to {@code seconds}) until {@code p} has at least {@code n} descendants; they. */
    static List<ProcessHandle> awaitDescendants(Process p, int n, long seconds) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        List<ProcessHandle> d;
        while ((d = p.toHandle().descendants().toList()).size() < n) {
            if (System.nanoTime() > end) {
                throw new AssertionError(p.pid() + " has " + d.size() + " descendants after " + seconds + " s, not " + n);
            }
            TimeUnit.MILLISECONDS.sleep(20); // polling the process table: processes being started
        }
        return d;
    }

    /** The processes this JVM started (its descendants) at one moment. */
    static final class Tree {
        private final Set<ProcessHandle> at;

        private Tree(Set<ProcessHandle> at) {
            this.at = at;
        }

        static Tree ofThisJvm() {
            return new Tree(ProcessHandle.current().descendants().collect(Collectors.toSet()));
        }

        /** Descendants started since and still running 30 s later (then ended), as {@code pid command line}. */
        List<String> newSince() throws Exception {
            return awaitExit(ProcessHandle.current().descendants().filter(h -> !at.contains(h)).toList(), 30);
        }
    }

    /** The {@code state} of the change at {@code status}. */
    static String state(String addr, String status) throws Exception {
        return TenplexCli.JSON.readTree(HTTP.send(HttpRequest.newBuilder(URI.create(addr + status))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body()).path("state").asText();
    }

    /** Polls (up to {@code seconds}) until generation {@code step} of {@code job} lists {@code level}. */
    static void awaitLevel(String addr, String job, long step, String level, long seconds) throws Exception {
        awaitLevel(addr, job, step, step + 1, level, seconds);
    }

    /**
     * Waits (up to {@code seconds}) until a generation of a step in [{@code from}, {@code to}) has
     * reached {@code level}: for a job that saves on, whose older generations are dropped once newer
     * ones complete, so that no one step's generation is sure to be listed when it gets there.
     */
    static void awaitLevel(String addr, String job, long from, long to, String level, long seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        String seen = "";
        while (System.nanoTime() < end) {
            JsonNode g = TenplexCli.JSON.readTree(HTTP.send(HttpRequest.newBuilder(URI.create(addr + "/api/v1/jobs/" + job
                    + "/generations")).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body());
            for (JsonNode gen : g.path("generations")) {
                long step = gen.path("step").asLong();
                if (step >= from && step < to && gen.path("levels").toString().contains("\"" + level + "\"")) {
                    return;
                }
            }
            seen = g.toString();
            TimeUnit.MILLISECONDS.sleep(50); // polling the flush to the durable directory
        }
        throw new AssertionError("no generation of steps " + from + " to " + (to - 1) + " of " + job + " " + level + " after "
                + seconds + " s: " + seen);
    }

    /** Waits (up to {@code seconds}) for the change's end ({@code ?wait=true}); its state and error. */
    static String awaitChangeEnd(String addr, String status, long seconds) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(addr + status + "?wait=true"))
                .timeout(Duration.ofSeconds(seconds)).build(), HttpResponse.BodyHandlers.ofString());
        JsonNode s = TenplexCli.JSON.readTree(r.body());
        return s.path("state").asText() + (s.hasNonNull("error") ? " (" + s.path("error").asText() + ")" : "");
    }

    /**
     * Polls the change's {@code status} route until it has left {@code stopping} (every rank saved: the
     * state moves, or the change ended); its state then.
     */
    static String awaitChangeMoving(String addr, String status, long seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < end) {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(addr + status))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            JsonNode s = TenplexCli.JSON.readTree(r.body());
            String state = s.path("state").asText();
            if (r.statusCode() == 200 && !state.equals("stopping")) {
                return state;
            }
            TimeUnit.MILLISECONDS.sleep(5); // polling the change's phase, the moment to kill at
        }
        throw new AssertionError("resource change " + status + " still stopping after " + seconds + " s");
    }
}
