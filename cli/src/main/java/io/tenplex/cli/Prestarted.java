package io.tenplex.cli;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * The next configuration's interpreters, started by {@code tenplex run} in relaunch mode when it posts a
 * resource change (issue 30 item 2): each runs {@code clients/python/tenplex/launchers/prestart.py} (carried in this
 * jar, run with {@code -c}), imports torch while the old ranks train, save and the daemon reconfigures,
 * and waits on its stdin. At the commit {@link #go} hands one its rank's final environment (the user's
 * script then runs in it, unchanged); {@link #close} tells the others to exit (end of input: they exit 0)
 * and ends by PID any that has not exited after {@link #EXIT_SECONDS}.
 */
final class Prestarted implements AutoCloseable {
    /** How long an interpreter told to exit may take before it is ended. */
    static final long EXIT_SECONDS = 10;
    /** The longest the next batch waits for the previous reconfiguration's first step before it starts. */
    static final long AFTER_SECONDS = 60;
    private static final ObjectWriter ASCII = TenplexCli.JSON.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII
            .mappedFeature());

    private final int segment;
    private final Deque<Waiting> waiting = new ArrayDeque<>();
    private final Consumer<String> log;
    /** Told to exit: no interpreter is started any more. */
    private boolean closed;
    /** The thread that starts the interpreters when it is time, or null. */
    private volatile Thread starter;

    private record Waiting(Process process, double spawnTime) {
    }

    private Prestarted(int segment, Consumer<String> log) {
        this.segment = segment;
        this.log = log;
    }

    /**
     * Whether {@code command} can be pre-started: a python (as {@link StoreHost#pythonOf}) running a script
     * file ({@code python SCRIPT ARGS...}, no interpreter options before it).
     */
    static boolean applies(List<String> command) {
        return StoreHost.pythonOf(command) != null && command.size() >= 2 && !command.get(1).startsWith("-")
                && Files.isRegularFile(Path.of(command.get(1)));
    }

    /**
     * Starts {@code n} interpreters (their output goes where the launcher's goes) once {@code after} has
     * completed or {@link #AFTER_SECONDS} have passed, unless closed by then.
     */
    private void startAfter(CompletableFuture<Void> after, List<String> command, int n) {
        try {
            after.get(AFTER_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            return;
        } catch (ExecutionException | TimeoutException e) {
            // start them anyway
        }
        try {
            start(command, n);
        } catch (IOException | RuntimeException e) {
            log.accept("could not pre-start the next configuration's interpreters (" + e.getMessage()
                    + "); its ranks start after the commit");
        }
    }

    private synchronized void start(List<String> command, int n) throws IOException {
        if (closed) {
            return;
        }
        List<String> cmd = new ArrayList<>(List.of(command.get(0), "-c", script()));
        cmd.addAll(command.subList(1, command.size()));
        try {
            for (int i = 0; i < n; i++) {
                double at = System.currentTimeMillis() / 1e3;
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.INHERIT)
                        .redirectError(ProcessBuilder.Redirect.INHERIT);
                RankMemoryTunables.apply(pb.environment()); // read when the interpreter starts, not at the go
                Process proc = pb.start();
                waiting.add(new Waiting(proc, at));
            }
        } catch (IOException e) {
            closeWaiting();
            throw e;
        }
        log.accept("pre-started " + n + " interpreter(s) for the next configuration (pids " + pids() + ")");
    }

    /**
     * In relaunch mode, unless {@code --no-prestart}: pre-starts the interpreters of segment {@code segment}
     * (the ranks of {@code next}, posted as resource change {@code change}; none for a stop, null) as the
     * run's {@link RunCli#prestarted}: at once for the run's first change, else once the previous
     * reconfiguration's new ranks have taken their first step (so that these imports do not run inside its
     * downtime), at most {@link #AFTER_SECONDS} after the post.
     */
    static void forNext(RunCli run, io.tenplex.adapters.Schedule.Entry next, String change, int segment, long start) {
        close(run);
        if (change == null || run.live || run.noPrestart || next.stops() || !applies(run.command)) {
            return;
        }
        int n = next.config() != null ? next.config().worldSize() : next.size();
        Prestarted p = new Prestarted(segment, line -> run.log(start, line));
        run.prestarted = p;
        CompletableFuture<Void> after = run.downtimes != null ? run.downtimes.lastComplete()
                : CompletableFuture.completedFuture(null);
        Thread t = new Thread(() -> p.startAfter(after, run.command, n), "tenplex-run-prestart");
        t.setDaemon(true);
        p.starter = t;
        t.start();
    }

    /** Tells the run's pre-started interpreters, if any, to exit (as {@link #close()}). */
    static void close(RunCli run) {
        Prestarted p = run.prestarted;
        if (p != null) {
            p.close();
        }
    }

    private static String script() throws IOException {
        try (InputStream s = Prestarted.class.getResourceAsStream("prestart.py")) {
            if (s == null) {
                throw new IllegalStateException("prestart.py is missing from the tenplex jar");
            }
            return new String(s.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** The segment whose ranks these interpreters are for. */
    int segment() {
        return segment;
    }

    /** Says {@code what} in the run's output. */
    void note(String what) {
        log.accept(what);
    }

    /**
     * Hands one waiting interpreter rank {@code rank}'s environment: what {@code env} (the environment the
     * launcher would start the rank with) adds to or changes in this launcher's own, with
     * {@code TENPLEX_SPAWN_TIME} the interpreter's start. The process, now the rank's, or null when none
     * waits or the one taken had exited (the rank is then started anew).
     */
    synchronized Process go(int rank, Map<String, String> env) {
        Waiting w = waiting.poll();
        if (w == null) {
            return null;
        }
        ObjectNode o = TenplexCli.JSON.createObjectNode();
        Map<String, String> own = System.getenv();
        env.forEach((k, v) -> {
            if (!Objects.equals(own.get(k), v)) {
                o.put(k, v);
            }
        });
        o.put("TENPLEX_SPAWN_TIME", String.format(Locale.ROOT, "%.6f", w.spawnTime()));
        try (OutputStream in = w.process().getOutputStream()) {
            if (!w.process().isAlive()) {
                throw new IOException("it has exited");
            }
            // one line of ASCII (other characters escaped), so that no locale can alter a byte of a value
            in.write(("go " + ASCII.writeValueAsString(o) + "\n").getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            String why = w.process().isAlive() ? e.getMessage() : "exit " + w.process().exitValue();
            log.accept("the pre-started interpreter " + w.process().pid() + " cannot take rank " + rank + " (" + why
                    + "); starting it anew");
            end(List.of(w.process()));
            return null;
        }
        return w.process();
    }

    /**
     * Tells every interpreter still waiting to exit (its input ends: it exits 0 without running anything)
     * and ends by PID any that has not exited after {@link #EXIT_SECONDS}; says so with their exit status.
     * Idempotent.
     */
    @Override
    public void close() {
        Thread s = starter;
        if (s != null && s != Thread.currentThread()) {
            s.interrupt(); // its wait ends; start() sees closed
        }
        closeWaiting();
    }

    private synchronized void closeWaiting() {
        closed = true;
        if (waiting.isEmpty()) {
            return;
        }
        List<Process> ps = waiting.stream().map(Waiting::process).toList();
        waiting.clear();
        for (Process p : ps) {
            try {
                p.getOutputStream().close();
            } catch (IOException e) {
                // already gone
            }
        }
        end(ps);
        log.accept(ps.size() + " pre-started interpreter(s) not needed, told to exit: " + ps.stream()
                .map(p -> p.pid() + " (" + (p.isAlive() ? "still running" : "exit " + p.exitValue()) + ")")
                .collect(Collectors.joining(", ")));
    }

    /** Waits up to {@link #EXIT_SECONDS} for each process, then ends it by PID (SIGTERM, then SIGKILL). */
    private static void end(List<Process> ps) {
        long due = System.nanoTime() + TimeUnit.SECONDS.toNanos(EXIT_SECONDS);
        for (Process p : ps) {
            try {
                if (!p.waitFor(Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    p.destroy();
                    if (!p.waitFor(5, TimeUnit.SECONDS)) {
                        p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                    }
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private String pids() {
        return waiting.stream().map(w -> Long.toString(w.process().pid())).collect(Collectors.joining(", "));
    }
}
