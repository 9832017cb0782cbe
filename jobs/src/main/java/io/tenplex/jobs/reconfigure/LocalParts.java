package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.LocalPlanner;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A daemon's own part of a change, built by that daemon from the change's definition
 * ({@link ChangeSpec}): both PTCs from the model and the placements, its own shards planned
 * ({@link LocalPlanner}), bound to the saved layouts of the old ranks it reads, and paced from the
 * whole change's loads, which every daemon computes alike. The part is the one a coordinator would
 * have sent (the same shards, pieces, values and files), except which replica serves a remote piece.
 */
public final class LocalParts {
    private LocalParts() {
    }

    /** The part, and the digest of the whole change's choices (equal on every daemon that planned it alike). */
    public record Built(PlanPart part, String digest) {}

    /**
     * @param layouts the saved layout of every old rank the part reads (and that saved something)
     * @throws IllegalArgumentException when the model cannot be cut as a configuration says, or a
     *     piece's holders saved no such tensor
     */
    public static Built build(ChangeSpec spec, Model model, int worker, Map<Integer, CheckpointLayout> layouts) {
        return build(spec, model, worker, layouts, null);
    }

    /** As {@link #build(ChangeSpec, Model, int, Map)}, reusing a part planned ahead when one was ({@code ahead}, or null). */
    public static Built build(ChangeSpec spec, Model model, int worker, Map<Integer, CheckpointLayout> layouts,
            OwnPartsAhead ahead) {
        OwnPartsAhead.Planned planned = ahead == null ? null : ahead.use(OwnPartsAhead.Key.of(spec, worker));
        if (planned == null) {
            planned = plan(spec, model, worker);
        }
        Ptc from = planned.from();
        LocalPlanner.OwnPart own = planned.own();
        PlanPaths.Result bound = PlanPaths.bind(own.plan(), layouts, true); // its own shards: bound once, kept
        Map<Integer, Long> rates = spec.linkRate() > 0 ? FlowRates.ownRates(bound.plan(), worker, spec.linkRate())
                : Map.of();
        PlanParts.Header h = new PlanParts.Header(spec.job(), spec.changeId(), spec.step(), unresolved(spec.daemons()));
        PlanPart peer = PlanParts.peerToPeer(h, worker, bound.plan(), from.worldSize(), spec.sourceDir(),
                bound.generated());
        PlanPart part = Rebuilding.readBy(peer, java.util.Set.copyOf(spec.rebuilding())).withFlowRates(rates)
                .coordinated(spec.participants(), spec.coordinator(), spec.changeId(), spec.preparedTimeoutMillis());
        return new Built(part, own.digest());
    }

    /** Both PTCs, and the part's pieces, planned (not yet bound to saved paths). */
    private static OwnPartsAhead.Planned plan(ChangeSpec spec, Model model, int worker) {
        Ptc from = ConfigJson.source(model, spec.from());
        Ptc to = ConfigJson.target(model, spec.to());
        io.tenplex.jobs.common.Limits.partSize(to.ranksOnWorker(worker).size(), to.model().tensors().size(),
                "worker " + worker + "'s part: ");
        LocalPlanner.OwnPart own = LocalPlanner.part(from, to, spec.copies(), worker);
        PlanHeap.requireChunks(own.plan());
        return new OwnPartsAhead.Planned(from, to, own);
    }

    /**
     * Plans this daemon's own part of a change before it is made (plan ahead), from the model and
     * addresses it keeps, and keeps it in {@code ahead} for the change; nothing is started or bound.
     * The definition's saved layouts, step and id are not used.
     *
     * @return the plan digest, or the descriptions this daemon lacks (nothing planned then)
     */
    public static DaemonClient.ChangeAnswer planAhead(ChangeSpec spec, java.util.function.Function<String, byte[]> kept,
            int worker, OwnPartsAhead ahead) {
        if (!spec.participants().contains(worker)) {
            throw new IllegalArgumentException("worker " + worker + " is not a participant of change " + spec.changeId());
        }
        byte[] model = kept.apply(spec.modelDigest());
        if (model == null) {
            return new DaemonClient.ChangeAnswer(null, "", List.of(spec.modelDigest()));
        }
        OwnPartsAhead.Planned p = ahead.plan(OwnPartsAhead.Key.of(spec, worker),
                () -> plan(spec, Descriptions.model(model), worker));
        return new DaemonClient.ChangeAnswer(null, p.own().digest(), List.of());
    }

    /**
     * Plans and starts this daemon's part of a change from the descriptions it keeps, or answers
     * which of them it lacks (nothing is started then).
     *
     * @param start starts a part (idempotent per change) and answers its first status
     */
    public static DaemonClient.ChangeAnswer start(ChangeSpec spec, Descriptions kept, PostedChanges posted,
            OwnPartsAhead ahead, int worker,
            java.util.function.Function<PlanPart, io.tenplex.jobs.common.PartStatus> start,
            java.util.function.Supplier<io.tenplex.jobs.common.PartStatus> existing) {
        if (!spec.participants().contains(worker)) {
            throw new IllegalArgumentException("worker " + worker + " is not a participant of change " + spec.changeId());
        }
        String definition = PostedChanges.definition(spec, worker);
        synchronized (posted) { // one change at a time: a retry racing its first post starts one part
            PostedChanges.Known before = posted.known(spec, definition);
            if (before != null) {
                io.tenplex.jobs.common.PartStatus running = existing.get();
                if (running == null) {
                    throw io.tenplex.store.StoreException.conflict("change " + spec.changeId() + " of job " + spec.job()
                            + " was planned here before and its part has ended; a change is made once");
                }
                return new DaemonClient.ChangeAnswer(running, before.planDigest(), List.of()); // a retry: as before
            }
            return plan(spec, kept, posted, ahead, worker, definition, start);
        }
    }

    private static DaemonClient.ChangeAnswer plan(ChangeSpec spec, Descriptions kept, PostedChanges posted,
            OwnPartsAhead ahead, int worker,
            String definition, java.util.function.Function<PlanPart, io.tenplex.jobs.common.PartStatus> start) {
        Described d = describe(spec, kept::get);
        if (!d.missing().isEmpty()) {
            return new DaemonClient.ChangeAnswer(null, "", d.missing());
        }
        Built b = build(d.spec(), d.model(), worker, d.layouts(), ahead);
        io.tenplex.jobs.common.PartStatus status = start.apply(b.part());
        posted.planned(spec, new PostedChanges.Known(definition, b.digest()));
        return new DaemonClient.ChangeAnswer(status, b.digest(), List.of());
    }

    /**
     * A definition with what its digests name: the model, the saved layout of every old rank that saved
     * something, and the workers' addresses when they travel by digest (then in {@code spec}).
     *
     * @param missing the digests of the descriptions this daemon lacks (nothing else is given then)
     */
    public record Described(ChangeSpec spec, Model model, Map<Integer, CheckpointLayout> layouts, List<String> missing) {}

    /**
     * The descriptions {@code spec} names, parsed, or the digests of those {@code kept} lacks.
     *
     * @param kept the description of a digest, or null
     * @throws IllegalArgumentException when a kept description is not what the definition names it as
     */
    public static Described describe(ChangeSpec spec, java.util.function.Function<String, byte[]> kept) {
        List<String> missing = new ArrayList<>();
        List<String> wanted = spec.descriptions();
        List<byte[]> described = new ArrayList<>(wanted.size());
        for (String d : wanted) {
            byte[] b = kept.apply(d);
            described.add(b);
            if (b == null) {
                missing.add(d);
            }
        }
        if (!missing.isEmpty()) {
            return new Described(spec, null, Map.of(), missing);
        }
        List<CheckpointLayout> layouts = described.subList(1, 1 + spec.layoutDigests().size()).stream()
                .map(Descriptions::layout).toList();
        Map<Integer, CheckpointLayout> byRank = new TreeMap<>();
        for (int r = 0; r < spec.rankLayouts().size(); r++) {
            int i = spec.rankLayouts().get(r);
            if (i >= 0) {
                byRank.put(r, layouts.get(i));
            }
        }
        ChangeSpec resolved = spec.daemonsDigest().isEmpty() ? spec
                : spec.withDaemons(Descriptions.addresses(described.get(described.size() - 1)));
        return new Described(resolved, Descriptions.model(described.get(0)), byRank, List.of());
    }

    /** The addresses as given (host:port), not looked up: the part names them as the change did. */
    private static Map<Integer, InetSocketAddress> unresolved(Map<Integer, String> daemons) {
        Map<Integer, InetSocketAddress> out = new TreeMap<>();
        daemons.forEach((w, a) -> {
            int colon = a.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("address of worker " + w + " is not host:port");
            }
            out.put(w, InetSocketAddress.createUnresolved(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))));
        });
        return out;
    }
}
