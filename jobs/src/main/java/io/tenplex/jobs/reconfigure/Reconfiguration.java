package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * The coordinator of one reconfiguration: checks that every daemon answers, sends each destination
 * worker its part of the plan, asks all to prepare, then commits everywhere, or aborts everywhere
 * when any part failed or did not answer in time. It talks to the daemons through a
 * {@link DaemonClient}: it checks the sources with {@link SourceChecks}, calls the parts with
 * {@link PartCalls}, and records what its status reports in a {@link ChangeProgress}.
 */
public final class Reconfiguration implements Registry.Finishing {
    public enum State { PLANNED, EXECUTING, COMMITTING, COMMITTED, ABORTED }

    /**
     * What parts need to resolve themselves when in doubt: the coordinator's address (host:port, may
     * be empty) and how long a prepared part waits.
     */
    public record InDoubtInfo(String coordinator, long preparedTimeoutMillis) {
    }

    /**
     * Where the old state is and how the new one is moved: the source directory, central worker (-1:
     * none), link rate, where each old rank is read when recovering around lost workers (else empty),
     * the old ranks still being rebuilt from parity meanwhile (read last, once published), and the
     * change's definition that every daemon plans its own part from (null only for Tenplex-Central,
     * whose parts the coordinator sends).
     */
    public record Source(String sourceDir, int central, long linkRate, Map<Integer, String> origins,
            Rebuilding rebuilding, Defined local) {
        public Source {
            origins = Map.copyOf(origins);
            if ((local == null) != (central >= 0)) {
                throw new IllegalArgumentException(central >= 0 ? "Tenplex-Central is planned by the coordinator"
                        : "a peer-to-peer change needs its definition: every daemon plans its own part");
            }
        }
    }

    /**
     * What a change's definition needs beyond the plan, when every daemon plans its own part: the model
     * as stored with the job (each side's PTC is made from it as the coordinator's was), the new
     * placement, and, when recovering around lost workers, the surviving workers keeping a complete
     * partner copy of each old rank (read too).
     */
    public record Defined(io.tenplex.ptc.Model stored, io.tenplex.jobs.common.ConfigJson.Placed to,
            Map<Integer, List<Integer>> copies) {
        public Defined {
            copies = Map.copyOf(copies);
        }
    }

    private final String job;
    private final String id;
    private final Plan plan;
    private final Ptc from;
    private final Map<Integer, InetSocketAddress> daemons;
    private final long step;
    private final DaemonClient client;
    private final int central;
    private final String sourceDir;
    private final long linkRate;
    private final Map<Integer, String> origins;
    private final Rebuilding rebuilding;
    private final Defined local;
    private final InDoubtInfo inDoubt;
    private volatile long finishedAt;
    private final CompletableFuture<Void> finished = new CompletableFuture<>();
    private final ChangeProgress progress = new ChangeProgress();
    private final SourceChecks checks;
    private final PartCalls calls;
    private volatile State state = State.PLANNED;

    public Reconfiguration(String job, String id, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons, long step,
            DaemonClient client, Source source, InDoubtInfo inDoubt) {
        this.sourceDir = source.sourceDir();
        this.linkRate = source.linkRate();
        this.origins = new java.util.concurrent.ConcurrentSkipListMap<>(source.origins()); // updated once rebuilt
        this.rebuilding = source.rebuilding();
        this.local = source.local();
        this.inDoubt = inDoubt;
        this.central = source.central();
        this.job = job;
        this.id = id;
        this.plan = plan;
        this.from = from;
        this.daemons = Map.copyOf(daemons);
        this.step = step;
        this.client = client;
        this.checks = new SourceChecks(job, sourceDir, plan, from, this.daemons, client, rebuilding, origins, progress);
        this.calls = new PartCalls(job, id, step, this.daemons, client, central, inDoubt, rebuilding, progress);
    }

    public String id() {
        return id;
    }

    /** The step of the state it moves (the source generation's, unless the request named another). */
    public long step() {
        return step;
    }

    public String job() {
        return job;
    }

    public State state() {
        return state;
    }

    /** The failure's reason, or null. */
    public String error() {
        return progress.error().isEmpty() ? null : progress.error();
    }

    public CompletableFuture<Void> finished() {
        return finished;
    }

    /** When it ended (System.nanoTime), 0 while it runs. */
    @Override
    public long finishedAt() {
        return finishedAt;
    }

    /** The old configuration's PTC, as planned from. */
    Ptc from() {
        return from;
    }

    /** The change's definition for every daemon to plan its own part of (null when planned centrally). */
    Defined local() {
        return local;
    }

    /**
     * The parts' addresses, the source directory, link rate and two-phase completion, as the parts get
     * them ({@code daemonsDigest}: the addresses' description's digest, or empty when they travel inline).
     */
    io.tenplex.jobs.common.ChangeSpec spec(String modelDigest, List<String> layoutDigests, List<Integer> rankLayouts,
            String daemonsDigest) {
        return new io.tenplex.jobs.common.ChangeSpec(job, id, step, modelDigest, new io.tenplex.jobs.common.ConfigJson
                .Placed(from.config(), from.devices()), local.to(), new PlanParts.Header(job, id, step, daemons)
                        .addresses(), local.copies(), sourceDir, linkRate, plan.destWorkers(), inDoubt.coordinator(),
                inDoubt.preparedTimeoutMillis(), layoutDigests, rankLayouts, List.copyOf(new java.util.TreeSet<>(
                        rebuilding.pending())), daemonsDigest);
    }

    /** Runs the whole reconfiguration on {@code background}. */
    public void start(ExecutorService background) {
        long started = System.nanoTime();
        ReconfigurationEvents.started(this);
        background.execute(() -> {
            try {
                run();
            } catch (Exception | Error e) { // an OutOfMemoryError too: the change ends aborted, never half-started
                progress.fail(reason(e));
                state = State.ABORTED;
            } finally {
                rebuilding.release().run(); // committed or aborted: nobody reads what the rebuild streamed
                finishedAt = System.nanoTime();
                ReconfigurationEvents.finished(this, started);
                finished.complete(null);
            }
        });
    }

    private void run() throws Exception {
        long t = System.nanoTime();
        checks.checkDaemons(local != null);
        Map<Integer, CheckpointLayout> sources = checks.listSources(local != null);
        CarriedValues.requireEqual(plan, sources, client, job, sourceDir, checks.holders(),
                rebuilding.pending()); // the ranks being rebuilt are compared once published
        PlanPaths.Result bound = local != null ? null : PlanPaths.bind(plan, sources); // else each daemon binds its own
        phase("check", t);
        state = State.EXECUTING;
        t = System.nanoTime();
        List<Integer> workers = plan.destWorkers();
        boolean ok;
        try {
            ok = (local != null ? executeLocal(workers, sources) : executeCentral(workers, bound, t))
                    && checks.rebuiltChecked(sources);
        } catch (RuntimeException | Error e) { // a part that could not be built or sent: abort those sent
            progress.fail(reason(e));
            abortAll(workers, t);
            return;
        }
        phase("execute", t);
        t = System.nanoTime();
        if (ok) {
            state = State.COMMITTING;
            if (calls.commit(workers)) {
                calls.dropCentral();
                phase("commit", t);
                // the final state last, so a reader that sees it also sees the whole report; a part
                // whose commit did not answer commits when it resolves (its error is reported)
                state = State.COMMITTED;
                return;
            }
        }
        abortAll(workers, t);
    }

    private String reason(Throwable e) {
        return e instanceof OutOfMemoryError o ? PlanHeap.ranOut(o, plan)
                : e.getMessage() == null ? e.toString() : e.getMessage();
    }

    /** Every daemon plans its own part from the change's definition; then all are prepared. */
    private boolean executeLocal(List<Integer> workers, Map<Integer, CheckpointLayout> sources) {
        LocalDefinition d = LocalDefinition.of(this, sources);
        return calls.executeChanges(workers, d.spec(), d.descriptions());
    }

    /**
     * Tenplex-Central, the baseline: the central worker assembles everything, then every worker fetches
     * its shards whole; the coordinator sends both parts. Whether all prepared.
     */
    private boolean executeCentral(List<Integer> workers, PlanPaths.Result bound, long t) {
        PlanParts.Header header = new PlanParts.Header(job, id, step, daemons);
        PlanParts.Header c = new PlanParts.Header(job, id + "-c", step, daemons);
        boolean ok = calls.executeParts(List.of(central), w -> rebuilding.readBy(PlanParts.central(c, w,
                bound.plan(), from.worldSize(), sourceDir)), id + "-c");
        phase("central", t);
        return ok && calls.executeParts(workers, w -> PlanParts.fromCentral(header, id + "-c", w, central,
                bound.plan(), bound.generated()), id);
    }

    private void abortAll(List<Integer> workers, long t) {
        calls.dropCentral();
        progress.failFromParts();
        calls.abortAll(workers);
        phase("abort", t);
        state = State.ABORTED;
    }

    private void phase(String name, long startNanos) {
        progress.phase(name, (System.nanoTime() - startNanos) / 1_000_000);
        ReconfigurationEvents.phase(this, name, (System.nanoTime() - startNanos) / 1_000_000);
    }

    /** Asks every part for its live status while executing (for progress); completes when all answered. */
    public CompletableFuture<Void> refresh() {
        if (state != State.EXECUTING) {
            return CompletableFuture.completedFuture(null);
        }
        return calls.refresh(plan.destWorkers());
    }

    /** State, phases, per-worker progress and the plan's report. */
    public ReconfigurationStatus describe() {
        Map<String, Long> phases = progress.phases();
        Map<String, ReconfigurationStatus.Worker> workers = progress.workers();
        return new ReconfigurationStatus(job, id, plan.from().toString(), plan.to().toString(),
                state.name().toLowerCase(java.util.Locale.ROOT), central >= 0 ? "central (worker " + central + ")"
                        : "peer-to-peer, each daemon planning its own part",
                new JobLayout(job, sourceDir, "load").source().toString(),
                linkRate > 0 && central < 0 ? linkRate : null, error(), phases, workers,
                ReconfigurationStatus.Report.of(plan.report()), origins.isEmpty() ? null : origins);
    }
}
