package io.tenplex.daemon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the chaos driver handed the daemons, and the load invariant. A generation is <em>sealed</em>
 * when every rank's seal was answered 200 and the last said {@code complete}; it is
 * <em>acknowledged</em> once every daemon lists {@code durable} among its levels (the daemons'
 * promise that it survives a crash). After every operation each rank's {@code GET .../load/<rank>}
 * must then be one of:
 * <ul>
 *   <li>{@code 200} naming a generation the driver sealed, whose tree holds exactly the sealed bytes
 *       (every path, every byte), or a reconfiguration's output whose tensors are exactly the
 *       sharding of a sealed generation's tensors into one of the configurations the driver asked for;</li>
 *   <li>and when that step is older than the newest acknowledged one, a reason for the loss: the
 *       generation's entry in {@code GET .../generations} says it was lost ({@code lost} or
 *       {@code damaged}), or the daemon logged it as {@code DAMAGED}, not restored, or superseded
 *       (a recovery went back to an older generation);</li>
 *   <li>{@code 404 not_found} (nothing to load) only under the same condition.</li>
 * </ul>
 * Anything else (other bytes, an unknown step, a silent fallback) is a violation.
 */
final class ChaosLedger {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A sealed generation: its step, configuration, full tensors and every rank's tree. */
    record Generation(long step, ParallelConfig config, Map<String, byte[]> full, List<Map<String, byte[]>> trees) {}

    private final Model model;
    private final List<ParallelConfig> configs;
    private final Map<Long, Generation> sealed = new ConcurrentHashMap<>();
    private final Map<String, Map<String, byte[]>> sharded = new ConcurrentHashMap<>();
    private volatile long acked = -1;
    private int generationsChecked;
    private int loadsChecked;
    private final java.util.concurrent.atomic.AtomicInteger lossesReported = new java.util.concurrent.atomic.AtomicInteger();

    ChaosLedger(Model model, List<ParallelConfig> configs) {
        this.model = model;
        this.configs = configs;
    }

    void sealed(Generation g) {
        sealed.put(g.step(), g);
    }

    void acknowledged(long step) {
        acked = Math.max(acked, step);
    }

    long acknowledged() {
        return acked;
    }

    int generationsChecked() {
        return generationsChecked;
    }

    int loadsChecked() {
        return loadsChecked;
    }

    /** Loads that served an older step than the newest acknowledged (or nothing) with the loss reported. */
    int lossesReported() {
        return lossesReported.get();
    }

    /** Every rank's load on its worker (rank r on worker r); the violations found. */
    List<String> checkLoads(ChaosCluster c) throws Exception {
        List<String> out = new ArrayList<>();
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int rank = 0; rank < ChaosCluster.WORKERS; rank++) {
            String v = checkLoad(c, rank, rank, seen);
            loadsChecked++;
            if (v != null) {
                out.add("rank " + rank + " on worker " + rank + ": " + v);
            }
        }
        generationsChecked += seen.size();
        return out;
    }

    private String checkLoad(ChaosCluster c, int w, int rank, java.util.Set<Long> seen) throws Exception {
        HttpResponse<byte[]> r = c.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/load/" + rank);
        long newest = acked;
        if (r.statusCode() == 404 && "not_found".equals(r.headers().firstValue("X-Tenplex-Error-Code").orElse(""))) {
            return newest < 0 || lossReported(c, w, newest) ? null : "acknowledged generation " + newest
                    + " lost without a reason: load answered " + ChaosSaves.summary(r);
        }
        if (r.statusCode() != 200) {
            return "load answered " + ChaosSaves.summary(r) + " (expected 200, or 404 not_found with a reported loss)";
        }
        JsonNode a = JSON.readTree(r.body());
        long step = a.path("step").asLong(-1);
        String source = a.path("source").asText();
        Generation g = sealed.get(step);
        if (g == null) {
            return "load names step " + step + " (" + source + "), which the driver never sealed: " + a;
        }
        seen.add(step);
        Map<String, byte[]> got;
        java.util.Set<String> badChecksums = new java.util.TreeSet<>();
        try {
            got = tree(c, w, a.path("path").asText(), badChecksums);
        } catch (AssertionError e) {
            return "load named " + a + " but its tree cannot be read: " + e.getMessage();
        }
        String wrong = source.equals("generation") ? differs(g.trees().get(rank), got, false)
                : source.equals("reconfiguration") ? movedDiffers(g, rank, got) : "unknown source '" + source + "'";
        if (wrong != null) {
            return "DIFFERENT BYTES in " + source + " step " + step + " at " + a.path("path").asText() + ": " + wrong
                    + (badChecksums.isEmpty() ? " (every x-tensor-crc32c matches the bytes sent: undetectable by a client)"
                    : " (x-tensor-crc32c does not match the bytes of " + badChecksums + ": a verifying client refuses them)");
        }
        if (!badChecksums.isEmpty()) {
            return "x-tensor-crc32c does not match the (right) bytes of " + badChecksums + " in " + source + " step " + step;
        }
        if (step < newest && !lossReported(c, w, newest)) {
            return "silent fallback: generation " + newest + " was acknowledged (durable on every daemon), load serves "
                    + source + " step " + step + " with no loss reported (generations: "
                    + new String(c.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/generations").body(), StandardCharsets.UTF_8)
                    + ")";
        }
        return null;
    }

    /** Whether worker {@code w} says that generation {@code step} was lost: in its generations' status, or its log. */
    private boolean lossReported(ChaosCluster c, int w, long step) throws Exception {
        HttpResponse<byte[]> r = c.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/generations");
        if (r.statusCode() == 200) {
            for (JsonNode g : JSON.readTree(r.body()).path("generations")) {
                if (g.path("step").asLong() == step && (g.hasNonNull("lost") || g.hasNonNull("damaged"))) {
                    return true;
                }
            }
        }
        String s = Long.toString(step);
        boolean logged = c.currentLog(w).stream().anyMatch(l -> (l.contains("DAMAGED") || l.contains("not restored")
                || l.contains("no intact durable generation") || l.contains("superseded"))
                && l.matches(".*\\b" + s + "\\b.*"));
        if (logged) {
            lossesReported.incrementAndGet();
        }
        return logged;
    }

    /**
     * Every file and tensor below {@code path} on worker {@code w}, path relative to it, to bytes; a
     * body whose {@code x-tensor-crc32c} does not match it is recorded in {@code badChecksums} (a
     * verifying client, as the Python one, refuses it).
     */
    private static Map<String, byte[]> tree(ChaosCluster c, int w, String path, java.util.Set<String> badChecksums)
            throws Exception {
        Map<String, byte[]> t = new TreeMap<>();
        HttpResponse<byte[]> l = c.get(w, "/api/v1/dirs" + path + "?recursive=true");
        if (l.statusCode() != 200) {
            throw new AssertionError("listing " + path + " on worker " + w + ": " + ChaosSaves.summary(l));
        }
        for (JsonNode e : JSON.readTree(l.body()).path("entries")) {
            String type = e.path("type").asText();
            if (type.equals("tensor") || type.equals("file")) {
                String p = e.path("path").asText();
                HttpResponse<byte[]> b = c.getChecksummed(w, "/api/v1/" + (type.equals("tensor") ? "tensors" : "files") + p);
                if (b.statusCode() != 200) {
                    throw new AssertionError("reading " + p + " on worker " + w + ": " + ChaosSaves.summary(b));
                }
                java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                crc.update(b.body());
                String want = b.headers().firstValue("x-tensor-crc32c").orElse("");
                if (!want.equalsIgnoreCase(String.format("%08x", crc.getValue()))) {
                    badChecksums.add(p.substring(path.length() + 1));
                }
                t.put(p.substring(path.length() + 1), b.body());
            }
        }
        return t;
    }

    /** Null when {@code got} holds exactly {@code want} (tensors only: files are ignored when {@code tensorsOnly}). */
    private static String differs(Map<String, byte[]> want, Map<String, byte[]> got, boolean tensorsOnly) {
        if (!tensorsOnly && !new java.util.TreeSet<>(want.keySet()).equals(got.keySet())) {
            return "paths " + got.keySet() + ", expected " + new java.util.TreeSet<>(want.keySet());
        }
        for (var e : want.entrySet()) {
            byte[] b = got.get(e.getKey());
            if (b == null) {
                return e.getKey() + " missing";
            }
            if (!Arrays.equals(e.getValue(), b)) {
                return e.getKey() + ": " + b.length + " bytes differ from the " + e.getValue().length + " saved (first at "
                        + Arrays.mismatch(e.getValue(), b) + ")";
            }
        }
        return null;
    }

    /** Null when {@code got}'s tensors are those of {@code g} sharded into one of the driver's configurations. */
    private String movedDiffers(Generation g, int rank, Map<String, byte[]> got) {
        List<String> tried = new ArrayList<>();
        for (ParallelConfig to : configs) {
            Map<String, byte[]> want = sharded.computeIfAbsent(g.step() + "/" + to + "/" + rank, k -> {
                Ptc ptc = Ptc.packed(model, to, 1);
                Map<String, byte[]> m = new TreeMap<>();
                ReferenceInterpreter.shard(ptc, g.full()).get(rank).forEach((key, b) -> m.put(key, b.data()));
                return m;
            });
            if (!want.keySet().stream().allMatch(got::containsKey)) {
                tried.add(to + ": other tensors");
                continue;
            }
            String d = differs(want, got, true);
            if (d == null) {
                return null;
            }
            tried.add(to + ": " + d);
        }
        return "matches no configuration's sharding of step " + g.step() + ": " + tried;
    }
}
