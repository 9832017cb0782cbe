package io.tenplex.daemon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What {@link ChaosIT} checks once the chaos has stopped: that the run exercised what it claims (every
 * enabled fault kind injected, a generation acknowledged, a reconfiguration and a recovery committed)
 * and that the daemons' end state is complete (durable directories within retention, no shared-memory
 * reservation or pin left open, file descriptors and resident memory within bounds). Each method answers
 * the violations it found.
 */
final class ChaosEnd {
    /** Open file descriptors a daemon may hold at the end (sockets, its log, pooled segments, jars). */
    static final int MAX_FDS = 400;
    /** Resident memory a daemon may use at the end: its heap (-Xmx256m), direct memory (512m) and the JVM's own. */
    static final long MAX_RSS_BYTES = 1200L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    private ChaosEnd() {
    }

    /** Every enabled kind injected at least once; a generation acknowledged; a reconfiguration and a recovery committed. */
    static List<String> minimums(Set<ChaosFault> enabled, Map<ChaosFault, Integer> injected, long acknowledged,
            Map<String, Integer> committed) {
        List<String> out = new ArrayList<>();
        for (ChaosFault f : enabled) {
            if (injected.getOrDefault(f, 0) == 0) {
                out.add("fault kind " + f.wireName() + " is enabled but was never injected (not even by the coverage at the end)");
            }
        }
        if (acknowledged < 0) {
            out.add("no generation was ever acknowledged (durable on every daemon)");
        }
        for (String kind : List.of("reconfigure", "recover")) {
            if (committed.getOrDefault(kind, 0) == 0) {
                out.add("no " + kind + " operation ever committed");
            }
        }
        return out;
    }

    /** The outcome of durable damage the restarted daemon reports in its generations' status ({@code lost}). */
    static final String REPORTED_LOST = "reported lost";

    /**
     * With {@code durable-truncate} on, at least one durable damage reported lost by the daemon's
     * structured report ({@code lost} in {@code GET .../generations}); {@code outcomes}: durable damage by
     * what the restarted daemon made of it (a damage that was not repaired and not reported is a breach of
     * its own, seen when it happened).
     */
    static List<String> durableLosses(Set<ChaosFault> enabled, Map<String, Integer> outcomes) {
        if (!enabled.contains(ChaosFault.DURABLE_TRUNCATE) || outcomes.getOrDefault(REPORTED_LOST, 0) > 0) {
            return List.of();
        }
        return List.of("durable damage was injected (" + outcomes + ") but the daemons never reported a loss in "
                + "GET .../generations (lost), not even after the coverage cut a manifest short");
    }

    /** Each worker's durable directory of the job holds at most {@code keep} complete generations (its retention). */
    static List<String> durableRetention(ChaosCluster c, int keep) throws IOException {
        List<String> out = new ArrayList<>();
        for (int w = 0; w < ChaosCluster.WORKERS; w++) {
            Path job = c.durable(w).resolve("jobs").resolve(ChaosSaves.JOB);
            if (!Files.isDirectory(job)) {
                continue;
            }
            List<String> complete;
            try (Stream<Path> s = Files.list(job)) {
                complete = s.filter(p -> p.getFileName().toString().matches("\\d+") && Files.exists(p.resolve("manifest.json")))
                        .map(p -> p.getFileName().toString()).sorted().toList();
            }
            if (complete.size() > keep) {
                out.add("worker " + w + "'s durable directory holds generations " + complete + ", more than durableKeep " + keep);
            }
        }
        return out;
    }

    /** No reservation or pin of the job left open on any daemon (before the job is deleted). */
    static List<String> openSegments(ChaosCluster c) throws Exception {
        List<String> out = new ArrayList<>();
        for (int w = 0; w < ChaosCluster.WORKERS; w++) {
            JsonNode s = JSON.readTree(c.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/shared").body());
            if (!s.path("open").isEmpty()) {
                out.add("worker " + w + " still holds shared-memory reservations or pins: " + s.path("open"));
            }
        }
        return out;
    }

    /** Every daemon's open file descriptors and resident memory within {@link #MAX_FDS} and {@link #MAX_RSS_BYTES}. */
    static List<String> processes(ChaosCluster c) throws IOException {
        List<String> out = new ArrayList<>();
        for (int w = 0; w < ChaosCluster.WORKERS; w++) {
            long pid = c.daemon(w).pid();
            long fds;
            try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                fds = s.count();
            }
            if (fds > MAX_FDS) {
                out.add("worker " + w + " (pid " + pid + ") holds " + fds + " file descriptors at the end, more than " + MAX_FDS);
            }
            long rss = Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
                    .filter(l -> l.startsWith("VmRSS:")).mapToLong(l -> Long.parseLong(l.replaceAll("\\D", "")) << 10)
                    .findFirst().orElse(0);
            if (rss > MAX_RSS_BYTES) {
                out.add("worker " + w + " (pid " + pid + ") has " + (rss >> 20) + " MiB resident at the end, more than "
                        + (MAX_RSS_BYTES >> 20));
            }
        }
        return out;
    }
}
