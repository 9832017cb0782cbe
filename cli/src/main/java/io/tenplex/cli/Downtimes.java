package io.tenplex.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The downtime of {@code tenplex run}'s reconfigurations: once a change has committed and the next
 * segment is launched, a background thread follows the change's status until its new ranks have reported
 * their first step, then prints the split (docs/OBSERVABILITY.md); the run's summary gives each
 * reconfiguration's split in place of its traffic alone.
 */
final class Downtimes {
    private static final Map<String, String> NAMES = Map.of("save", "save", "commit", "commit wait", "regroup",
            "regroup", "relaunch", "relaunch", "rebuild", "rebuild", "load", "load", "first_step", "first step");

    /** A reconfiguration of the run: the start of its summary line, its change's status path and last status. */
    record Finished(String head, String path, JsonNode status) {
        /** The change's status now (its split complete by now), or the last one read if the daemon forgot it. */
        JsonNode now(TenplexCli.Target t) {
            try {
                return t.get(path);
            } catch (Exception e) {
                return status;
            }
        }
    }

    private final TenplexCli.Target t;
    private final Consumer<String> print;
    private final List<Thread> watchers = new ArrayList<>();
    private final List<String[]> unprinted = java.util.Collections.synchronizedList(new ArrayList<>());
    private volatile CompletableFuture<Void> last = CompletableFuture.completedFuture(null);

    Downtimes(TenplexCli.Target t, Consumer<String> print) {
        this.t = t;
        this.print = print;
    }

    /** Follows the change at {@code path} (it moved generation {@code step}) until its split is complete. */
    void watch(String path, String step) {
        String[] w0 = {path, step};
        unprinted.add(w0);
        CompletableFuture<Void> done = new CompletableFuture<>();
        last = done;
        Thread w = new Thread(() -> {
            try {
                follow(path, step);
            } finally {
                done.complete(null);
            }
        }, "tenplex-run-downtime");
        w.setDaemon(true);
        w.start();
        watchers.add(w);
    }

    /**
     * Completes when the split of the change watched last is complete (its new ranks have taken their first
     * step) or its watch ended; at once when none was watched.
     */
    CompletableFuture<Void> lastComplete() {
        return last;
    }

    private void follow(String path, String step) {
        try {
            while (!Thread.currentThread().isInterrupted()) {
                JsonNode d = t.get(path).path("downtime");
                if (d.path("complete").asBoolean(false)) {
                    printed(path, step, d);
                    return;
                }
                Thread.sleep(ChangeEvents.POLL_MILLIS); // polling the daemon for the ranks' reports
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // the summary reads the split again at the end of the run
        }
    }

    private void printed(String path, String step, JsonNode d) {
        if (unprinted.removeIf(u -> u[0].equals(path))) {
            print.accept("reconfiguration at step " + step + ": " + split(d));
        }
    }

    /**
     * Stops following (the run's processes have exited, so every report has been sent): a split not printed
     * yet is printed now, as far as the ranks reported it.
     */
    void close() throws InterruptedException {
        for (Thread w : watchers) {
            w.interrupt();
            w.join();
        }
        watchers.clear();
        for (String[] u : List.copyOf(unprinted)) {
            try {
                printed(u[0], u[1], t.get(u[0]).path("downtime"));
            } catch (Exception e) {
                unprinted.remove(u); // the summary says what is known
            }
        }
    }

    /**
     * A split as one line: {@code downtime 3.541 s: save 0.031 s, commit wait 0.071 s (plan 0.010 s, move
     * 0.050 s, commit 0.005 s), relaunch 3.040 s, load 0.230 s, first step 0.170 s; 2.100 s from the
     * change to the stop step}; "not reported" when no rank reported it.
     */
    static String split(JsonNode d) {
        if (d.isMissingNode() || d.isNull() || !d.path("seconds").isNumber()) {
            return "downtime not reported" + (d.path("ranksStopped").asInt(0) > 0 ? " (the new ranks have not "
                    + "reported their first step)" : " (no rank reported it)");
        }
        StringBuilder b = new StringBuilder("downtime " + s(d.path("seconds")) + ":");
        String sep = " ";
        for (var it = d.path("phases").fields(); it.hasNext(); ) {
            var e = it.next();
            b.append(sep).append(NAMES.getOrDefault(e.getKey(), e.getKey())).append(' ').append(s(e.getValue()));
            if (e.getKey().equals("commit")) {
                b.append(daemon(d.path("daemon")));
            }
            sep = ", ";
        }
        if (!d.path("complete").asBoolean(false)) {
            b.append(" (").append(d.path("ranksStarted").asInt()).append(" ranks reported their first step so far)");
        }
        return b.append("; ").append(s(d.path("waitForStopSeconds"))).append(" from the change to the stop step")
                .append(slow(d.path("slowPaths"))).append(slowMoves(d.path("slowMoves"))).toString();
    }

    /** The slow paths the ranks reported ("; slower: rank 1's load: 12 tensors over REST (why)"), at most 4. */
    private static String slow(JsonNode paths) {
        if (!paths.isArray() || paths.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("; slower than it could be:");
        for (int i = 0; i < Math.min(4, paths.size()); i++) {
            JsonNode p = paths.get(i);
            b.append(i == 0 ? " " : "; ").append("rank ").append(p.path("rank").asInt()).append("'s ")
                    .append(NAMES.getOrDefault(p.path("phase").asText(), p.path("phase").asText())).append(": ")
                    .append(p.path("what").asText()).append(" (").append(p.path("why").asText()).append(')');
        }
        return paths.size() > 4 ? b.append("; and ").append(paths.size() - 4).append(" more").toString() : b.toString();
    }

    /** The workers whose part of the move took slower memory ("; the move on worker 0: 695.0 MB into ..."). */
    private static String slowMoves(JsonNode byWorker) {
        StringBuilder b = new StringBuilder();
        byWorker.fields().forEachRemaining(e -> b.append("; the move on worker ").append(e.getKey()).append(": ")
                .append(e.getValue().asText()));
        return b.toString();
    }

    private static String daemon(JsonNode d) {
        List<String> parts = new ArrayList<>();
        for (String k : new String[] {"plan", "move", "commit"}) {
            if (d.path(k).isNumber()) {
                parts.add(k + " " + s(d.path(k)));
            }
        }
        return parts.isEmpty() ? "" : " (" + String.join(", ", parts) + ")";
    }

    private static String s(JsonNode v) {
        return v.isNumber() ? String.format(Locale.ROOT, "%.3f s", v.asDouble()) : "?";
    }

    /** The summary line of a finished change: the plan's traffic, then its downtime split. */
    static String report(JsonNode status) {
        JsonNode r = status.path("reconfiguration").path("report");
        return String.format(Locale.ROOT, "moved %s within workers, %s between workers, kept %s; %s",
                Human.bytes(r.path("intraWorkerBytes").asLong() + r.path("onDeviceBytes").asLong()),
                Human.bytes(r.path("interWorkerBytes").asLong()), Human.bytes(r.path("keptBytes").asLong()),
                split(status.path("downtime")));
    }
}
