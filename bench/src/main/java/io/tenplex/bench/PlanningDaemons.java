package io.tenplex.bench;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonClient.ChangeAnswer;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.reconfigure.Descriptions;
import io.tenplex.jobs.reconfigure.LocalParts;
import io.tenplex.server.jobs.ChangeSpecCodec;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The daemons of {@link CoordinatorBench} when every daemon plans its own part: a change's definition
 * is encoded and decoded as on the wire; a daemon asks for the descriptions it names that it lacks
 * (it holds its own ranks' layouts from checking their trees, and what it was sent; each is counted
 * once per daemon). The first daemon asked plans its own part for real
 * ({@link LocalParts}: both PTCs, its shards, binding, pacing) and is timed: daemons plan in parallel,
 * so one daemon's part is the critical path. The others answer that daemon's digest at once (planning
 * 511 parts one after another on this machine would time the machine, not the protocol).
 */
final class PlanningDaemons {
    private final Map<Integer, Set<String>> held = new ConcurrentHashMap<>();
    private final Map<String, byte[]> kept = new ConcurrentHashMap<>();
    private final AtomicLong specBytes = new AtomicLong();
    private final AtomicLong descriptionBytes = new AtomicLong();
    private volatile String digest;
    private volatile double partSeconds;
    private volatile int planned = -1;

    /**
     * The answer of worker {@code w}'s daemon to a change's definition. The definition is encoded as the
     * client sends it (each daemon decodes its own in parallel: only the daemon that plans decodes here).
     */
    synchronized ChangeAnswer post(int w, ChangeSpec sent) {
        if (sent != lastSpec) { // as the client encodes it: once per change
            lastSpec = sent;
            lastBody = ChangeSpecCodec.encode(sent).toByteArray();
        }
        byte[] body = lastBody;
        specBytes.accumulateAndGet(body.length, Math::max);
        Set<String> has = held.getOrDefault(w, Set.of());
        List<String> missing = sent.descriptions().stream().filter(d -> !has.contains(d)).toList();
        if (!missing.isEmpty()) {
            return new ChangeAnswer(null, "", missing);
        }
        if (!sent.changeId().equals(plannedChange)) { // the first daemon asked of each change plans for real
            plannedChange = sent.changeId();
            ChangeSpec spec;
            try {
                spec = ChangeSpecCodec.decode(io.tenplex.server.control.ChangeSpec.parseFrom(body));
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new IllegalStateException(e);
            }
            plan(spec.participants().get(0), spec); // the digest answered is the whole change's: any daemon's
            plannedSpec = spec;
        }
        return new ChangeAnswer(new PartStatus(sent.changeId(), "running", "", 0, 0, 0, 0, 0, 0, 0, null), digest,
                List.of());
    }

    private volatile ChangeSpec plannedSpec;
    private String plannedChange;
    private ChangeSpec lastSpec;
    private byte[] lastBody;

    /**
     * Plans the same part again, after the change (s): as the same daemon's next change of this job,
     * with the planner's code compiled (the descriptions parsed anew).
     */
    synchronized double warmSeconds() {
        double first = partSeconds;
        plan(planned, plannedSpec);
        double again = partSeconds;
        partSeconds = first;
        return again;
    }

    /**
     * The daemon that plans for real, planning its own part ahead of the change (plan ahead; the others
     * answer as it does: the digest is the whole change's).
     */
    synchronized ChangeAnswer planAhead(ChangeSpec spec) {
        if (aheadDigest == null) {
            long t = System.nanoTime();
            ChangeSpec decoded;
            try {
                decoded = ChangeSpecCodec.decode(io.tenplex.server.control.ChangeSpec.parseFrom(ChangeSpecCodec.encode(spec)
                        .toByteArray()));
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new IllegalStateException(e);
            }
            ChangeAnswer a = LocalParts.planAhead(decoded, kept::get, spec.participants().get(0), ahead);
            aheadSeconds = (System.nanoTime() - t) / 1e9;
            aheadDigest = a.missing().isEmpty() ? a.planDigest() : "";
        }
        return new ChangeAnswer(null, aheadDigest, List.of());
    }

    private final io.tenplex.jobs.reconfigure.OwnPartsAhead ahead = new io.tenplex.jobs.reconfigure.OwnPartsAhead();
    private String aheadDigest;
    private double aheadSeconds;

    /** How long the daemon that plans for real took to plan its own part ahead (s), and whether a change used it. */
    synchronized String aheadSummary() {
        return aheadDigest == null ? "not planned ahead" : String.format(java.util.Locale.ROOT,
                "planned ahead in %.3f s (used by %d of the changes)", aheadSeconds, ahead.used());
    }

    private void plan(int w, ChangeSpec spec) {
        long t = System.nanoTime();
        LocalParts.Described d = LocalParts.describe(spec, kept::get);
        LocalParts.Built b = LocalParts.build(d.spec(), d.model(), w, d.layouts(), ahead);
        partSeconds = (System.nanoTime() - t) / 1e9;
        digest = b.digest();
        planned = w;
    }

    /** A description sent to worker {@code w}'s daemon. */
    void put(int w, String d, byte[] bytes) {
        descriptionBytes.addAndGet(bytes.length);
        hold(w, d, bytes);
    }

    /** A description worker {@code w}'s daemon has: sent, or made checking its own ranks' trees. */
    void hold(int w, String d, byte[] bytes) {
        kept.put(d, bytes);
        held.computeIfAbsent(w, x -> ConcurrentHashMap.newKeySet()).add(d);
    }

    /** Forgets what was counted (not what daemons keep): for the next change of the same job. */
    synchronized void count() {
        specBytes.set(0);
        descriptionBytes.set(0);
    }

    /** The largest definition one daemon was sent (bytes). */
    long specBytes() {
        return specBytes.get();
    }

    /** Descriptions sent in all (bytes; once per daemon). */
    long descriptionBytes() {
        return descriptionBytes.get();
    }

    /** How long the daemon that planned for real took for its own part (s). */
    double partSeconds() {
        return partSeconds;
    }

    int plannedWorker() {
        return planned;
    }
}
