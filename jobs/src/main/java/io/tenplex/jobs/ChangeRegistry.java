package io.tenplex.jobs;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.jobs.reconfigure.Registry;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The reconfigurations this daemon coordinates and the parts of plans it runs, each kept in a
 * {@link Registry} that forgets finished entries: starting them (with the request's settings, else the
 * daemon's defaults), finding, counting and forgetting them.
 */
final class ChangeRegistry {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ChangeRegistry.class);
    private final TensorStore store;
    private final DaemonClient client;
    private final RangeReads reads;
    private final JobExecutors exec;
    private final Generations generations;
    private final ClusterDefaults cluster;
    private final Registry<PartRunner> parts;
    private final Registry<Reconfiguration> reconfigurations;
    private volatile io.tenplex.store.memory.SharedSegments moveSegments;

    /** @param clock nanoseconds, for the registries' retention (tests advance it) */
    ChangeRegistry(TensorStore store, DaemonClient client, RangeReads reads, JobExecutors exec, Generations generations,
            ClusterDefaults cluster, Duration retention, LongSupplier clock) {
        this.store = store;
        this.client = client;
        this.reads = reads;
        this.exec = exec;
        this.generations = generations;
        this.cluster = cluster;
        this.parts = new Registry<>(retention, Jobs.MAX_FINISHED, clock);
        this.reconfigurations = new Registry<>(retention, Jobs.MAX_FINISHED, clock);
    }

    /** Where moves place new shards: the daemon's shared memory, or null for private memory. */
    void setMoveSegments(io.tenplex.store.memory.SharedSegments segments) {
        moveSegments = segments;
    }

    /**
     * Touches, in the background, the shared memory this daemon's ranks' saves (with {@code saves}) and
     * its part of a change planned ahead will write ({@link io.tenplex.jobs.reconfigure.SegmentsAhead},
     * {@link io.tenplex.store.memory.SharedSegments#prewarm(java.util.List)}), while the job trains
     * towards its stop step: the save and the move then write into recycled memory. Best effort: a
     * failure is logged.
     */
    void prewarm(io.tenplex.jobs.reconfigure.PlanAhead ahead, java.util.OptionalInt self, boolean saves) {
        io.tenplex.store.memory.SharedSegments segments = moveSegments;
        io.tenplex.transform.Plan plan = ahead.madePlan();
        if (segments == null || plan == null || self.isEmpty()) {
            return;
        }
        java.util.List<Long> sizes = io.tenplex.jobs.reconfigure.SegmentsAhead.sizes(plan, ahead.madeFrom(),
                self.getAsInt(), saves);
        try {
            exec.background().execute(() -> {
                try {
                    int made = segments.prewarm(sizes);
                    if (made > 0) {
                        LOG.info("touched {} of {} shared-memory segments ahead of the save and move of {} -> {} (data"
                                + " bytes wanted, saves then the move: {})", made, sizes.size(), plan.from(), plan.to(),
                                sizes);
                    }
                } catch (java.io.IOException | RuntimeException e) {
                    LOG.info("shared memory not touched ahead of the move of {} -> {}: {}", plan.from(), plan.to(), e.toString());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
        }
    }

    private final io.tenplex.jobs.reconfigure.DescriptionsAhead described = new io.tenplex.jobs.reconfigure
            .DescriptionsAhead();

    /**
     * Sends the descriptions of the model and of the workers' addresses to the daemons of the new
     * placement ahead of a change every daemon plans its own part of, then the change as known ahead,
     * so that each plans its own part while the job trains: the change neither sends them nor plans in
     * its downtime. Best effort (not when planned around lost workers: those plan when the change comes).
     *
     * @return completes when sent (at once when nothing was planned or nothing is to send)
     */
    java.util.concurrent.CompletableFuture<Void> describeAhead(ReconfigureRequest r,
            io.tenplex.jobs.reconfigure.PlanAhead ahead) {
        io.tenplex.ptc.Ptc to = ahead.madeFor();
        io.tenplex.ptc.Ptc from = ahead.madeFrom();
        if (to == null || from == null || ahead.stored() == null || !r.plannedLocally()) {
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
        Map<Integer, InetSocketAddress> daemons = cluster.daemons(r.daemons());
        try {
            return described.planAhead(client, io.tenplex.jobs.reconfigure.LocalDefinition.ahead(r.job(), ahead.stored(),
                    from, to, daemons), ahead.stored(), daemons, exec.background());
        } catch (RuntimeException e) { // closing (rejected), or a definition that cannot be made: best effort
            LOG.info("job {}: not planned ahead on its daemons ({}); they plan when the change comes", r.job(), e.toString());
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
    }

    /** How long finished parts and reconfigurations are kept. */
    void setRetention(Duration retention) {
        parts.setRetention(retention);
        reconfigurations.setRetention(retention);
    }

    /** Starts this daemon's part of a plan (idempotent per plan: a known part is answered as it is). */
    PartRunner startPart(PlanPart part) {
        PartRunner.Context ctx = new PartRunner.Context(store, client, reads, exec.readers(),
                exec.background(), exec.timer(), cluster.preparedTimeout(), generations, moveSegments);
        synchronized (abortedFirst) {
            if (abortedFirst.containsKey(part.job() + "/" + part.planId())) {
                throw StoreException.conflict("plan " + part.planId() + " of job " + part.job() + " was aborted before "
                        + "its part started here; a change is made once");
            }
            return parts.computeIfAbsent(part.job(), part.planId(), () -> new PartRunner(part, ctx));
        }
    }

    /**
     * Aborts this daemon's part of a plan; a plan whose part has not started here (its definition still
     * on its way, say) is remembered as aborted, so a late start is refused rather than run and left
     * in doubt.
     *
     * @return completes once the part has stopped and dropped what it staged (at most {@link #STOP_WAIT})
     */
    java.util.concurrent.CompletableFuture<io.tenplex.jobs.common.PartStatus> abortPart(String job, String planId) {
        PartRunner runner;
        synchronized (abortedFirst) {
            parts.prune();
            java.util.Optional<PartRunner> p = parts.get(job, planId);
            if (p.isEmpty()) {
                abortedFirst.put(job + "/" + planId, Boolean.TRUE);
                return java.util.concurrent.CompletableFuture.completedFuture(new io.tenplex.jobs.common.PartStatus(
                        planId, "aborted", "aborted before its part started here", 0, 0, 0, 0, 0, 0, 0, null));
            }
            runner = p.get();
            runner.abort();
        }
        return runner.stopped(STOP_WAIT);
    }

    /** How long an abort's answer waits for the part's run to stop (its in-flight pieces to end). */
    static final Duration STOP_WAIT = Duration.ofSeconds(10);

    /** Plans aborted before their part started here (job/plan), the newest 4096. */
    private final Map<String, Boolean> abortedFirst = new java.util.LinkedHashMap<>() {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > 4096;
        }
    };

    /** The status of a part this daemon still has, or null. */
    io.tenplex.jobs.common.PartStatus knownPart(String job, String planId) {
        parts.prune();
        return parts.get(job, planId).map(PartRunner::status).orElse(null);
    }

    /** @throws StoreException not found when this daemon has no such part */
    PartRunner part(String job, String planId) {
        parts.prune();
        return parts.get(job, planId).orElseThrow(() -> StoreException.notFound("no part of plan " + planId + " of job "
                + job + " on this daemon"));
    }

    /**
     * Checks the planned change's daemons, then starts coordinating it in the background.
     *
     * @param newId the new reconfiguration's id, asked for once its daemons are checked
     */
    Reconfiguration start(ReconfigureRequest r, ReconfigurationPlanner.Planned p, Supplier<String> newId) {
        Reconfiguration.Defined local;
        try {
            io.tenplex.jobs.reconfigure.PlanHeap.check(p.plan(), r.central(), Runtime.getRuntime().maxMemory());
            local = r.plannedLocally() ? p.defined() : null;
        } catch (RuntimeException e) {
            p.rebuilding().release().run(); // a rebuild started for a change refused here is read by nobody
            throw e;
        }
        Map<Integer, InetSocketAddress> daemons = cluster.daemons(r.daemons());
        if (daemons.isEmpty()) {
            throw new IllegalArgumentException("no daemon addresses: give \"daemons\" in the request or start tenplexd "
                    + "with --peers");
        }
        if (r.central() >= 0 && !daemons.containsKey(r.central())) {
            throw new IllegalArgumentException("central worker " + r.central() + " has no daemon address");
        }
        long prepared = r.preparedTimeoutMillis().orElse(Math.min(Integer.MAX_VALUE, cluster.preparedTimeout().toMillis()));
        String coordinator = r.coordinator() != null ? r.coordinator() : cluster.selfAddress();
        String id = newId.get();
        Reconfiguration c = new Reconfiguration(r.job(), id, p.plan(), p.from(), daemons, p.step(), client,
                new Reconfiguration.Source(p.sourceDir(), r.central(), r.linkRate().orElse(cluster.linkRate()), p.origins(),
                        p.rebuilding(), local),
                new Reconfiguration.InDoubtInfo(coordinator, prepared));
        reconfigurations.put(r.job(), id, c);
        c.start(exec.background());
        return c;
    }

    /** @throws StoreException not found when this daemon coordinates no such reconfiguration (any more) */
    Reconfiguration reconfiguration(String job, String id) {
        reconfigurations.prune();
        return reconfigurations.get(job, id).orElseThrow(() -> StoreException.notFound("no reconfiguration " + id
                + " of job " + job));
    }

    /** Forgets the finished parts and reconfigurations of a job. */
    void forget(String job) {
        parts.forget(job);
        reconfigurations.forget(job);
    }

    /** Whether a part or reconfiguration of {@code job} still runs here. */
    boolean running(String job) {
        return parts.of(job).stream().anyMatch(p -> p.finishedAt() == 0)
                || reconfigurations.of(job).stream().anyMatch(r -> r.finishedAt() == 0);
    }

    /** How many parts and reconfigurations of {@code job} this daemon keeps. */
    int kept(String job) {
        return parts.of(job).size() + reconfigurations.of(job).size();
    }
}
