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
 *   <li>and when that step is older than the newest acknowledged one, a reason for the loss in the
 *       daemon's structured report: the newest acknowledged generation's entry in
 *       {@code GET .../generations} carries {@code lost} ({@link #lostReason}). A log line naming the
 *       step is not a report (a client cannot read it); it is only quoted in the violation;</li>
 *   <li>{@code 404 not_found} (nothing to load) only under the same condition.</li>
 * </ul>
 * Anything else (other bytes, an unknown step, a silent fallback) is a violation.
 */
final class ChaosLedger {
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * What {@link #movedDiffers} answers when the only bytes that differ are in tensors whose checksum
     * refuses them (a flip in a segment the output links): not a violation, and not a checksum on right bytes.
     */
    private static final String FLIP_REFUSED = "changed bytes, each refused by its x-tensor-crc32c";

    /** A sealed generation: its step, configuration, full tensors and every rank's tree. */
    record Generation(long step, ParallelConfig config, Map<String, byte[]> full, List<Map<String, byte[]>> trees) {}

    /** Configurations the driver asked a reconfiguration or recovery for, in order (a generation's output is cut into one asked after it). */
    private final List<ParallelConfig> requested = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Per sealed step, how many requests had been made when it was sealed. */
    private final Map<Long, Integer> requestsAtSeal = new ConcurrentHashMap<>();
    /** Whether bytes changed in a committed segment (SHM_FLIP) may be served: only with a checksum that refuses them. */
    private volatile boolean flipsInjected;
    private final java.util.concurrent.atomic.AtomicInteger flipsDetected = new java.util.concurrent.atomic.AtomicInteger();

    private final Model model;
    private final Map<Long, Generation> sealed = new ConcurrentHashMap<>();
    private final Map<String, Map<String, byte[]>> sharded = new ConcurrentHashMap<>();
    private volatile long acked = -1;
    private int generationsChecked;
    private int loadsChecked;
    private final java.util.concurrent.atomic.AtomicInteger lossesReported = new java.util.concurrent.atomic.AtomicInteger();

    ChaosLedger(Model model) {
        this.model = model;
    }

    void sealed(Generation g) {
        requestsAtSeal.put(g.step(), requested.size());
        sealed.put(g.step(), g);
    }

    /** The driver asked for the current generation in configuration {@code to}. */
    void requested(ParallelConfig to) {
        requested.add(to);
    }

    /** Bytes of committed segments were changed: loads may serve them, with a checksum that refuses them. */
    void flipsInjected() {
        flipsInjected = true;
    }

    /** Loads that served changed bytes whose x-tensor-crc32c refused them (a verifying client's error). */
    int flipsDetected() {
        return flipsDetected.get();
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
                    + " lost without a reason in the generations' status: load answered " + ChaosSaves.summary(r)
                    + loggedOnly(c, w, newest);
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
        java.util.Set<String> files = new java.util.TreeSet<>();
        try {
            got = tree(c, w, a.path("path").asText(), badChecksums, files);
        } catch (AssertionError e) {
            return "load named " + a + " but its tree cannot be read: " + e.getMessage();
        }
        String wrong = source.equals("generation") ? differs(g.trees().get(rank), got, false)
                : source.equals("reconfiguration") ? movedDiffers(g, rank, got, files, badChecksums)
                : "unknown source '" + source + "'";
        if (wrong != null && source.equals("generation") && flipsInjected && !badChecksums.isEmpty()
                && badChecksums.containsAll(differing(g.trees().get(rank), got))) {
            flipsDetected.incrementAndGet(); // changed in a segment, refused by its checksum: never served as good
            return null;
        }
        if (FLIP_REFUSED.equals(wrong)) {
            return null; // a moved tensor's linked segment changed after the commit; its checksum refuses it
        }
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
                    + ")" + loggedOnly(c, w, newest);
        }
        return null;
    }

    /** Whether worker {@code w} reports generation {@code step} lost in its generations' status (counted). */
    private boolean lossReported(ChaosCluster c, int w, long step) throws Exception {
        if (lostReason(c, w, step) != null) {
            lossesReported.incrementAndGet();
            return true;
        }
        return false;
    }

    /**
     * Why worker {@code w} says it lost generation {@code step}: the {@code lost} field of the step's
     * entry in {@code GET .../generations}, the daemon's structured report; null when it reports no loss
     * (or does not answer 200).
     */
    static String lostReason(ChaosCluster c, int w, long step) throws Exception {
        JsonNode g = generation(c, w, step);
        return g != null && g.hasNonNull("lost") ? g.path("lost").asText() : null;
    }

    /** The entry of {@code step} in worker {@code w}'s {@code GET .../generations}, or null (absent, or not 200). */
    static JsonNode generation(ChaosCluster c, int w, long step) throws Exception {
        return entry(c.get(w, "/api/v1/jobs/" + ChaosSaves.JOB + "/generations"), step);
    }

    /** The entry of {@code step} in an answer of {@code GET .../generations}, or null (absent, or not 200). */
    static JsonNode entry(HttpResponse<byte[]> r, long step) throws java.io.IOException {
        if (r.statusCode() == 200) {
            for (JsonNode g : JSON.readTree(r.body()).path("generations")) {
                if (g.path("step").asLong() == step) {
                    return g;
                }
            }
        }
        return null;
    }

    /**
     * For a violation's message: the lines of worker {@code w}'s log that name {@code step} as damaged, not
     * restored or superseded (a loss only the log tells of is not reported: clients read the status).
     */
    private static String loggedOnly(ChaosCluster c, int w, long step) {
        String s = Long.toString(step);
        List<String> lines = c.currentLog(w).stream().filter(l -> (l.contains("DAMAGED") || l.contains("not restored")
                || l.contains("no intact durable generation") || l.contains("superseded")) && l.matches(".*\\b" + s + "\\b.*"))
                .limit(3).toList();
        return lines.isEmpty() ? "" : "; only its log names the loss: " + lines;
    }

    /**
     * The output's copies of the tied word embeddings on the last pipeline stage ({@code
     * word_embeddings_for_head}, with their optimizer states) that the source generation did not hold
     * (saved with one stage): the daemon makes them when it adds a last stage. Removed from {@code tensors}
     * when the embedding they stand for exists; their bytes are not checked (they are not the embedding's
     * bytes in every run: what they should hold is an open question, docs/DURABLE.md); what is wrong
     * about them, else null.
     */
    private static String tiedHead(Generation g, java.util.Set<String> tensors, java.util.Set<String> expected) {
        for (String k : List.copyOf(tensors)) {
            if (!k.contains("word_embeddings_for_head") || expected.contains(k) || g.full().containsKey(k)) {
                continue;
            }
            if (!g.full().containsKey(k.replace("word_embeddings_for_head", "language_model.embedding.word_embeddings"))) {
                return k + " is not in the model's sharding and has no embedding to come from";
            }
            tensors.remove(k);
        }
        return null;
    }

    /** The paths of {@code got} whose bytes differ from (or are not in) {@code want}. */
    private static java.util.Set<String> differing(Map<String, byte[]> want, Map<String, byte[]> got) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        for (var e : got.entrySet()) {
            if (!Arrays.equals(want.get(e.getKey()), e.getValue())) {
                out.add(e.getKey());
            }
        }
        return out;
    }

    /**
     * Every file and tensor below {@code path} on worker {@code w}, path relative to it, to bytes; a
     * body whose {@code x-tensor-crc32c} does not match it is recorded in {@code badChecksums} (a
     * verifying client, as the Python one, refuses it).
     */
    private static Map<String, byte[]> tree(ChaosCluster c, int w, String path, java.util.Set<String> badChecksums,
            java.util.Set<String> files) throws Exception {
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
                if (type.equals("file")) {
                    files.add(p.substring(path.length() + 1));
                }
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

    /**
     * Null when {@code got}'s tensors are exactly those of {@code g} sharded into a configuration the
     * driver asked for after it sealed {@code g} (no other tensors; {@code files} are the output's files);
     * {@link #FLIP_REFUSED} when every tensor that differs from that sharding was served with an
     * {@code x-tensor-crc32c} that refuses it ({@code badChecksums}: a segment the output links was
     * changed, as the flips do); else what differs.
     */
    private String movedDiffers(Generation g, int rank, Map<String, byte[]> got, java.util.Set<String> files,
            java.util.Set<String> badChecksums) {
        List<String> tried = new ArrayList<>();
        java.util.Set<String> tensors = new java.util.TreeSet<>(got.keySet());
        tensors.removeAll(files);
        List<ParallelConfig> asked = requested.subList(requestsAtSeal.getOrDefault(g.step(), 0), requested.size());
        for (ParallelConfig to : new java.util.LinkedHashSet<>(asked)) {
            Map<String, byte[]> want = sharded.computeIfAbsent(g.step() + "/" + to + "/" + rank, k -> {
                Ptc ptc = Ptc.packed(model, to, 1);
                Map<String, byte[]> m = new TreeMap<>();
                ReferenceInterpreter.shard(ptc, g.full()).get(rank).forEach((key, b) -> m.put(key, b.data()));
                return m;
            });
            String head = tiedHead(g, tensors, want.keySet());
            if (head != null) {
                tried.add(to + ": " + head);
                continue;
            }
            if (!want.keySet().equals(tensors)) {
                java.util.Set<String> missing = new java.util.TreeSet<>(want.keySet());
                missing.removeAll(tensors);
                java.util.Set<String> extra = new java.util.TreeSet<>(tensors);
                extra.removeAll(want.keySet());
                tried.add(to + ": other tensors (" + missing.size() + " missing, e.g. " + missing.stream().limit(2).toList()
                        + "; " + extra.size() + " not of it, e.g. " + extra.stream().limit(2).toList() + ")");
                continue;
            }
            String d = differs(want, got, true);
            if (d == null) {
                return null;
            }
            Map<String, byte[]> gotTensors = new TreeMap<>(got);
            gotTensors.keySet().retainAll(tensors);
            java.util.Set<String> changed = differing(want, gotTensors);
            if (flipsInjected && !badChecksums.isEmpty() && badChecksums.containsAll(changed)) {
                flipsDetected.incrementAndGet(); // changed in a segment the output links, refused by its checksum
                return FLIP_REFUSED;
            }
            tried.add(to + ": " + d);
        }
        return "matches no requested configuration's sharding of step " + g.step() + " (asked after it: " + asked + "): "
                + tried;
    }
}
