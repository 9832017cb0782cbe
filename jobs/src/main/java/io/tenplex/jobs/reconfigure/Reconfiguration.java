package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.DaemonClient.PartAction;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.function.IntFunction;

/**
 * The coordinator of one reconfiguration: checks that every daemon answers, sends each destination
 * worker its part of the plan, asks all to prepare, then commits everywhere, or aborts everywhere
 * when any part failed or did not answer in time. It talks to the daemons through a
 * {@link DaemonClient}.
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
     * and the old ranks still being rebuilt from parity meanwhile (read last, once published).
     */
    public record Source(String sourceDir, int central, long linkRate, Map<Integer, String> origins,
            Rebuilding rebuilding) {
        public Source {
            origins = Map.copyOf(origins);
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
    private final InDoubtInfo inDoubt;
    private final Rebuilding rebuilding;
    private volatile long finishedAt;
    private final CompletableFuture<Void> finished = new CompletableFuture<>();
    /** Written by the coordinator thread, read by status requests: guarded by itself. */
    private final Map<String, Long> phaseMillis = new LinkedHashMap<>();
    private final Map<Integer, PartStatus> parts = new TreeMap<>();
    private volatile State state = State.PLANNED;
    private volatile String error = "";

    public Reconfiguration(String job, String id, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons, long step,
            DaemonClient client, Source source, InDoubtInfo inDoubt) {
        this.inDoubt = inDoubt;
        this.sourceDir = source.sourceDir();
        this.linkRate = source.linkRate();
        this.origins = new java.util.concurrent.ConcurrentSkipListMap<>(source.origins()); // updated once rebuilt
        this.rebuilding = source.rebuilding();
        this.central = source.central();
        this.job = job;
        this.id = id;
        this.plan = plan;
        this.from = from;
        this.daemons = Map.copyOf(daemons);
        this.step = step;
        this.client = client;
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
        return error.isEmpty() ? null : error;
    }

    public CompletableFuture<Void> finished() {
        return finished;
    }

    /** When it ended (System.nanoTime), 0 while it runs. */
    @Override
    public long finishedAt() {
        return finishedAt;
    }

    /** Runs the whole reconfiguration on {@code background}. */
    public void start(ExecutorService background) {
        long started = System.nanoTime();
        ReconfigurationEvents.started(this);
        background.execute(() -> {
            try {
                run();
            } catch (Exception | Error e) { // an OutOfMemoryError too: the change ends aborted, never half-started
                error = reason(e);
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
        checkDaemons();
        Map<Integer, CheckpointLayout> sources = listSources();
        CarriedValues.requireEqual(plan, sources, client, new JobLayout(job, sourceDir, "load"), holders(),
                rebuilding.pending()); // the ranks being rebuilt are compared once published
        PlanPaths.Result bound = PlanPaths.bind(plan, sources);
        phase("check", t);
        state = State.EXECUTING;
        t = System.nanoTime();
        List<Integer> workers = plan.destWorkers();
        boolean ok;
        try {
            ok = execute(workers, bound, t) && rebuiltChecked(sources);
        } catch (RuntimeException | Error e) { // a part that could not be built or sent: abort those sent
            error = reason(e);
            abortAll(workers, t);
            return;
        }
        phase("execute", t);
        t = System.nanoTime();
        if (ok) {
            state = State.COMMITTING;
            if (commit(workers)) {
                dropCentral();
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

    /** Every daemon involved answers its health check, and no new shard is over one chunk. */
    private void checkDaemons() throws IOException, InterruptedException {
        for (int w : workersInvolved()) {
            if (!daemons.containsKey(w)) {
                throw new IOException("no daemon address for worker " + w);
            }
            try {
                client.health(daemons.get(w)).get();
            } catch (ExecutionException e) {
                throw new IOException("daemon of worker " + w + " at " + daemons.get(w) + " is unreachable: "
                        + e.getCause().getMessage(), e.getCause());
            }
        }
        PlanHeap.requireChunks(plan);
    }

    /** Once the ranks rebuilt from parity are published (checked), their carried values are compared too. */
    private boolean rebuiltChecked(Map<Integer, CheckpointLayout> sources) throws InterruptedException {
        try {
            if (rebuilding.await(Rebuilding.TIMEOUT)) {
                origins.putAll(rebuilding.origins()); // a rank whose rebuild failed was read from its durable copy
                CarriedValues.requireEqual(plan, sources, client, new JobLayout(job, sourceDir, "load"), holders(),
                        java.util.Set.of());
            }
            return true;
        } catch (IOException | IllegalArgumentException e) {
            error = e.getMessage();
            return false;
        }
    }

    /** Sends every part and prepares it (central mode: the central part first); whether all prepared. */
    private boolean execute(List<Integer> workers, PlanPaths.Result bound, long t) {
        PlanParts.Header header = new PlanParts.Header(job, id, step, daemons);
        if (central >= 0) {
            // Tenplex-Central: the central worker assembles everything, then every worker fetches its shards whole
            PlanParts.Header c = new PlanParts.Header(job, id + "-c", step, daemons);
            boolean ok = executeParts(List.of(central), w -> rebuilding.readBy(PlanParts.central(c, w, bound.plan(),
                    from.worldSize(), sourceDir)), id + "-c");
            phase("central", t);
            return ok && executeParts(workers, w -> PlanParts.fromCentral(header, id + "-c", w, central, bound.plan(),
                    bound.generated()), id);
        }
        Map<Integer, Map<Integer, Long>> rates = linkRate > 0 ? FlowRates.rates(bound.plan(), linkRate) : Map.of();
        return executeParts(workers, w -> rebuilding.readBy(PlanParts.peerToPeer(header, w, bound.plan(),
                from.worldSize(), sourceDir, bound.generated()).withFlowRates(rates.getOrDefault(w, Map.of()))), id);
    }

    private void abortAll(List<Integer> workers, long t) {
        dropCentral();
        if (error.isEmpty()) {
            synchronized (parts) {
                error = parts.values().stream().filter(p -> !p.error().isEmpty()).map(PartStatus::error).findFirst()
                        .orElse("a part did not prepare");
            }
        }
        for (int w : workers) {
            try {
                call(w, id, PartAction.ABORT).get();
            } catch (Exception e) {
                // a daemon that is down has nothing staged that survives its restart
            }
        }
        phase("abort", t);
        state = State.ABORTED;
    }

    /**
     * Commits the commit point (the first worker) alone, then the others at once. When the commit
     * point refuses or does not answer, nobody has committed and the caller aborts everywhere; once
     * it has committed, parts in doubt learn from it that they must commit too ({@link InDoubt}).
     *
     * @return whether the commit point committed (the others' answers and failures are recorded)
     */
    private boolean commit(List<Integer> workers) {
        CommitHook.reached(0);
        int point = workers.get(0);
        if (!collect(workers.subList(0, 1), List.of(call(point, id, PartAction.COMMIT)))
                && !"committed".equals(askPart(point))) {
            return false; // the commit point did not commit (its answer may have been lost: asked once more)
        }
        CommitHook.reached(1);
        List<Integer> rest = workers.subList(1, workers.size());
        List<CompletableFuture<PartStatus>> committed = new ArrayList<>();
        for (int w : rest) {
            committed.add(call(w, id, PartAction.COMMIT));
        }
        collect(rest, committed);
        return true;
    }

    /** The state of a worker's part, asked directly (or {@link InDoubt#UNREACHABLE}). */
    private String askPart(int worker) {
        Map<Integer, String> addresses = new PlanParts.Header(job, id, step, daemons).addresses();
        return new PeerParts(job, id, addresses, "", "", client).part(worker);
    }

    /** Lists every old rank's saved tree on the daemon of its worker (a rank with none saved nothing). */
    private Map<Integer, CheckpointLayout> listSources() throws IOException, InterruptedException {
        Map<Integer, InetSocketAddress> listed = holders();
        listed.keySet().removeAll(rebuilding.pending()); // listed as their manifests say they will be published
        return rebuilding.withPending(SavedTrees.list(client, new JobLayout(job, sourceDir, "load"), listed));
    }

    /** The daemon of every old rank. */
    private Map<Integer, InetSocketAddress> holders() {
        Map<Integer, InetSocketAddress> holders = new TreeMap<>();
        for (int r = 0; r < from.worldSize(); r++) {
            holders.put(r, daemons.get(from.device(r).worker()));
        }
        return holders;
    }

    private void phase(String name, long startNanos) {
        synchronized (phaseMillis) {
            phaseMillis.put(name, (System.nanoTime() - startNanos) / 1_000_000);
        }
        ReconfigurationEvents.phase(this, name, (System.nanoTime() - startNanos) / 1_000_000);
    }

    private void dropCentral() {
        if (central >= 0) {
            try {
                call(central, id + "-c", PartAction.ABORT).get();
            } catch (Exception e) {
                // the central part may never have started
            }
        }
    }

    /** Sends each worker its part ({@link PartPosts}) and waits until all are prepared; false when any failed. */
    private boolean executeParts(List<Integer> workers, IntFunction<PlanPart> part, String planId) {
        List<CompletableFuture<PartStatus>> sent = PartPosts.postAll(workers, w -> part.apply(w).coordinated(workers,
                inDoubt.coordinator(), id, inDoubt.preparedTimeoutMillis()), (w, p) -> client.postPart(daemons.get(w), p));
        if (!collect(workers, sent)) {
            return false;
        }
        rebuilding.onFailure(why -> { // the parts' reads of its ranks would wait for nothing: abort them at once
            if (error.isEmpty()) {
                error = why;
            }
            workers.forEach(w -> call(w, planId, PartAction.ABORT));
        });
        List<CompletableFuture<PartStatus>> prepared = new ArrayList<>();
        for (int w : workers) {
            prepared.add(call(w, planId, PartAction.PREPARE));
        }
        boolean ok = collect(workers, prepared);
        synchronized (parts) {
            return ok && workers.stream().allMatch(w -> parts.get(w).state().equals("prepared"));
        }
    }

    private List<Integer> workersInvolved() {
        List<Integer> w = new ArrayList<>(plan.destWorkers());
        for (Device d : from.devices()) {
            if (!w.contains(d.worker())) {
                w.add(d.worker());
            }
        }
        return w;
    }

    private boolean collect(List<Integer> workers, List<CompletableFuture<PartStatus>> calls) {
        boolean ok = true;
        for (int i = 0; i < workers.size(); i++) {
            try {
                PartStatus s = calls.get(i).get();
                synchronized (parts) {
                    parts.put(workers.get(i), s);
                }
            } catch (Exception e) {
                ok = false;
                if (error.isEmpty()) {
                    error = "worker " + workers.get(i) + ": " + (e.getCause() != null ? e.getCause().getMessage()
                            : e.getMessage());
                }
            }
        }
        return ok;
    }

    private CompletableFuture<PartStatus> call(int worker, String planId, PartAction action) {
        return client.partAction(daemons.get(worker), job, planId, action);
    }

    /** Asks every part for its live status while executing (for progress); completes when all answered. */
    public CompletableFuture<Void> refresh() {
        if (state != State.EXECUTING) {
            return CompletableFuture.completedFuture(null);
        }
        List<CompletableFuture<Void>> asks = new ArrayList<>();
        for (int w : plan.destWorkers()) {
            asks.add(client.partStatus(daemons.get(w), job, id).thenAccept(p -> {
                synchronized (parts) {
                    parts.put(w, p);
                }
            }).exceptionally(t -> null)); // keep the last known status
        }
        return CompletableFuture.allOf(asks.toArray(new CompletableFuture[0]));
    }

    /** State, phases, per-worker progress and the plan's report. */
    public ReconfigurationStatus describe() {
        Map<String, Long> phases;
        synchronized (phaseMillis) {
            phases = new LinkedHashMap<>(phaseMillis); // a copy: the coordinator may still add phases
        }
        Map<String, ReconfigurationStatus.Worker> progress = new LinkedHashMap<>();
        synchronized (parts) {
            parts.forEach((w, p) -> progress.put(Integer.toString(w), ReconfigurationStatus.Worker.of(p)));
        }
        return new ReconfigurationStatus(job, id, plan.from().toString(), plan.to().toString(),
                state.name().toLowerCase(java.util.Locale.ROOT), central >= 0 ? "central (worker " + central + ")"
                        : "peer-to-peer", new JobLayout(job, sourceDir, "load").source().toString(),
                linkRate > 0 && central < 0 ? linkRate : null, error.isEmpty() ? null : error, phases, progress,
                ReconfigurationStatus.Report.of(plan.report()), origins.isEmpty() ? null : origins);
    }
}
