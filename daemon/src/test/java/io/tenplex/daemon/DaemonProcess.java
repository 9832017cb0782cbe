package io.tenplex.daemon;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A real tenplexd process started by a test; it is ended only by its PID. */
public final class DaemonProcess implements AutoCloseable {
    private static final Pattern READY = Pattern.compile("ready on (https?)://([\\d.]+):(\\d+)");

    private final Process process;
    private final List<String> log = new ArrayList<>();
    private final Thread drain;
    private final String url;
    private final int port;

    private DaemonProcess(Process process, BufferedReader out, String scheme, String host, int port) {
        this.process = process;
        this.port = port;
        this.url = scheme + "://" + host + ":" + port;
        this.drain = new Thread(() -> out.lines().forEach(this::keep), "daemon-log");
        drain.setDaemon(true);
        drain.start();
    }

    /** Starts {@code tenplexd args...} and returns once it logs that it is ready. */
    /** Ports reserved on loopback for {@code n} workers, and the {@code --peers} value naming them. */
    public record Peers(List<Integer> ports, String arg) {
        public String port(int worker) {
            return Integer.toString(ports.get(worker));
        }
    }

    /** Reserves {@code n} free loopback ports (held together, then released) for daemons started with {@code --peers}. */
    public static Peers reservePeers(int n) throws IOException {
        List<java.net.ServerSocket> held = new java.util.ArrayList<>();
        try {
            for (int w = 0; w < n; w++) {
                held.add(new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()));
            }
        } finally {
            for (java.net.ServerSocket s : held) {
                s.close();
            }
        }
        List<Integer> ports = held.stream().map(java.net.ServerSocket::getLocalPort).toList();
        StringBuilder arg = new StringBuilder();
        for (int w = 0; w < n; w++) {
            arg.append(w > 0 ? "," : "").append(w).append("=127.0.0.1:").append(ports.get(w));
        }
        return new Peers(ports, arg.toString());
    }

    public static DaemonProcess start(String... args) throws IOException {
        return start(java.util.Map.of(), List.of(), args);
    }

    /** As {@link #start(String...)} with {@code env} added to the daemon's environment. */
    public static DaemonProcess start(java.util.Map<String, String> env, String... args) throws IOException {
        return start(env, List.of(), args);
    }

    /** As {@link #start(String...)}, with JVM options (e.g. a test-only {@code -D} property) before the class. */
    public static DaemonProcess start(List<String> jvm, String... args) throws IOException {
        return start(java.util.Map.of(), jvm, args);
    }

    /**
     * As {@link #start(String...)}, run by {@code launcher} (a command that runs the rest of its
     * arguments in its own process, e.g. {@code prlimit --fsize=N --}).
     */
    public static DaemonProcess startUnder(List<String> launcher, String... args) throws IOException {
        return start(java.util.Map.of(), List.of(), launcher, args);
    }

    private static DaemonProcess start(java.util.Map<String, String> env, List<String> jvm, String... args)
            throws IOException {
        return start(env, jvm, List.of(), args);
    }

    private static DaemonProcess start(java.util.Map<String, String> env, List<String> jvm, List<String> launcher,
            String... args) throws IOException {
        List<String> cmd = new ArrayList<>(launcher);
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvm);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Tenplexd.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        List<String> early = new ArrayList<>();
        String line;
        while ((line = out.readLine()) != null) {
            early.add(line);
            Matcher m = READY.matcher(line);
            if (m.find()) {
                DaemonProcess d = new DaemonProcess(p, out, m.group(1), m.group(2), Integer.parseInt(m.group(3)));
                early.forEach(d::keep);
                return d;
            }
        }
        throw new AssertionError("daemon exited before it was ready:\n" + String.join("\n", early));
    }

    public String url() {
        return url;
    }

    public InetSocketAddress address() {
        return new InetSocketAddress("127.0.0.1", port);
    }

    long pid() {
        return process.pid();
    }

    /** Whether the process runs. */
    public boolean running() {
        return process.isAlive();
    }

    /** Whether the process still runs; its exit status otherwise. */
    java.util.OptionalInt exitStatus() {
        return process.isAlive() ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(process.exitValue());
    }

    private synchronized void keep(String line) {
        log.add(line);
        notifyAll();
    }

    /** Waits (up to {@code seconds}) for a log line containing {@code text}; the first such line. */
    public synchronized String awaitLine(String text, long seconds) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            for (String l : log) {
                if (l.contains(text)) {
                    return l;
                }
            }
            long left = end - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("no log line with '" + text + "' within " + seconds + " s:\n"
                        + String.join("\n", log));
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    public synchronized List<String> log() {
        return List.copyOf(log);
    }

    /** Waits (up to 60 s) for the process to end by itself; its exit status. */
    int awaitExit() throws IOException, InterruptedException {
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IOException("daemon " + process.pid() + " did not exit within 60 s");
        }
        return process.exitValue();
    }

    /** Sends a signal by PID (Process.destroy would also close our end of its output) and waits for the exit. */
    int signal(String signal) throws IOException, InterruptedException {
        if (signal.equals("KILL")) {
            process.toHandle().destroyForcibly(); // SIGKILL at once, without a kill process to start first
        } else if (new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start().waitFor() != 0) {
            throw new IOException("kill -" + signal + " " + process.pid() + " failed");
        }
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IOException("daemon " + process.pid() + " did not exit after SIG" + signal);
        }
        drain.join(); // the log is complete once the pipe reaches end of file
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly().waitFor();
        }
    }
}
