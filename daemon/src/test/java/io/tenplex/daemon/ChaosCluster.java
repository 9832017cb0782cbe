package io.tenplex.daemon;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The chaos test's four tenplexd processes: they know each other by {@code --peers}, each has its own
 * durable directory ({@code w<worker>}) and shared-memory directory, worker 0's a small tmpfs
 * ({@link #tmpfs()}) the chaos thread fills; every JVM writes a crash file (if it ever crashes) into
 * one directory ({@link #crashFiles()}). A daemon is ended only by the PID this class started and is
 * started again on the same port and directories; the log of every run of a worker is kept.
 */
final class ChaosCluster implements AutoCloseable {
    static final int WORKERS = 4;
    private static final String TMPFS_SIZE = "8m";

    private final Path root;
    private final DaemonProcess.Peers peers;
    private final DaemonProcess[] daemons = new DaemonProcess[WORKERS];
    private final int[] starts = new int[WORKERS];
    private final List<List<String>> logs = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private boolean mounted;

    private ChaosCluster(Path root) throws IOException {
        this.root = root;
        this.peers = DaemonProcess.reservePeers(WORKERS);
        for (int w = 0; w < WORKERS; w++) {
            logs.add(new ArrayList<>());
        }
    }

    /** Mounts worker 0's tmpfs and starts the four daemons; everything below {@code root}. */
    static ChaosCluster start(Path root) throws Exception {
        ChaosCluster c = new ChaosCluster(root);
        try {
            Files.createDirectories(c.crashDir());
            Files.createDirectories(c.tmpfs());
            Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + TMPFS_SIZE, "tmpfs",
                    c.tmpfs().toString()).inheritIO().start();
            if (mount.waitFor() != 0) {
                throw new IOException("mount -t tmpfs " + c.tmpfs() + " failed (exit " + mount.exitValue() + ")");
            }
            c.mounted = true;
            for (int w = 0; w < WORKERS; w++) {
                c.startWorker(w);
            }
        } catch (Exception | AssertionError e) {
            c.close();
            throw e;
        }
        return c;
    }

    Path crashDir() {
        return root.resolve("crashes");
    }

    /** Worker 0's shared-memory directory, a tmpfs of {@value #TMPFS_SIZE}. */
    Path tmpfs() {
        return root.resolve("shm0");
    }

    Path shm(int w) {
        return w == 0 ? tmpfs() : root.resolve("shm" + w);
    }

    Path durable(int w) {
        return root.resolve("w" + w);
    }

    private void startWorker(int w) throws IOException {
        Files.createDirectories(shm(w));
        List<String> jvm = List.of("-Xmx256m", "-XX:MaxDirectMemorySize=512m", "-XX:+UseSerialGC", "-XX:ErrorFile=" + crashDir().resolve("hs_err_%p.log"));
        DaemonProcess d = DaemonProcess.start(jvm, "--port", peers.port(w), "--peers", peers.arg(), "--memory-limit",
                "160m", "--checkpoint-dir", durable(w).toString(), "--shm-dir", shm(w).toString(),
                "--prepared-timeout", "3s", "--coordinator-timeout", "20s");
        synchronized (this) {
            daemons[w] = d;
            starts[w]++;
        }
    }

    synchronized DaemonProcess daemon(int w) {
        return daemons[w];
    }

    /** How often worker {@code w}'s daemon was started. */
    synchronized int starts(int w) {
        return starts[w];
    }

    /** SIGKILLs worker {@code w}'s daemon (by the PID started here) and starts it again on its port and directories. */
    void killAndRestart(int w) throws Exception {
        DaemonProcess d = daemon(w);
        int exit = d.signal("KILL");
        synchronized (this) {
            logs.get(w).addAll(d.log());
        }
        if (exit != 137) {
            throw new AssertionError("worker " + w + "'s daemon exited " + exit + " instead of 137 on SIGKILL:\n"
                    + String.join("\n", d.log()));
        }
        startWorker(w);
    }

    /**
     * Starts worker {@code w}'s daemon again if it ended by itself (not by a signal sent here); a line
     * saying how it ended and the end of its log, or null when it runs.
     */
    String restartIfDead(int w) throws Exception {
        DaemonProcess d = daemon(w);
        java.util.OptionalInt exit = d.exitStatus();
        if (exit.isEmpty()) {
            return null;
        }
        d.signal("KILL"); // already gone: waits for its log to be complete
        List<String> log = d.log();
        synchronized (this) {
            logs.get(w).addAll(log);
        }
        startWorker(w);
        return "worker " + w + "'s daemon (pid " + d.pid() + ") died by itself, exit " + exit.getAsInt() + "; last lines:\n"
                + String.join("\n", log.subList(Math.max(0, log.size() - 15), log.size()));
    }

    /** Every log line of worker {@code w}, all its runs, the running one last. */
    synchronized List<String> log(int w) {
        List<String> all = new ArrayList<>(logs.get(w));
        all.addAll(daemons[w].log());
        return all;
    }

    /** The log lines of worker {@code w}'s running daemon. */
    List<String> currentLog(int w) {
        return daemon(w).log();
    }

    /** JVM crash files ({@code hs_err_<pid>.log}) written by any daemon. */
    List<Path> crashFiles() throws IOException {
        try (Stream<Path> s = Files.list(crashDir())) {
            return s.toList();
        }
    }

    HttpResponse<byte[]> send(int w, String method, String path, byte[] body, Duration timeout)
            throws IOException, InterruptedException {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(daemon(w).url() + path)).timeout(timeout)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (body != null && path.startsWith("/api/v1/jobs")) {
            r.header("Content-Type", "application/json");
        }
        return http.send(r.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpResponse<byte[]> send(int w, String method, String path, byte[] body) throws IOException, InterruptedException {
        return send(w, method, path, body, Duration.ofSeconds(60));
    }

    HttpResponse<byte[]> get(int w, String path) throws IOException, InterruptedException {
        return send(w, "GET", path, null);
    }

    /** A GET asking for the body's checksum ({@code x-want-crc32c: 1}), as the clients read tensors and files. */
    HttpResponse<byte[]> getChecksummed(int w, String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(daemon(w).url() + path)).timeout(Duration.ofSeconds(60))
                .header("x-want-crc32c", "1").build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Override
    public void close() throws Exception {
        for (DaemonProcess d : daemons) {
            if (d != null) {
                d.close();
            }
        }
        if (mounted) {
            new ProcessBuilder("umount", "-l", tmpfs().toString()).inheritIO().start().waitFor();
            mounted = false;
        }
    }
}
