package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.downtime.ChangeTimes;
import io.tenplex.adapters.downtime.DowntimeMetrics;
import io.tenplex.adapters.downtime.ChangeReports;
import io.tenplex.adapters.downtime.DowntimeSplit;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.JobMetrics;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.Registry;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The job lifecycle behind every scheduler adapter (paper §5.1): a resource change raises the job's
 * stop flag, chooses the configuration (given, or by a {@link Parallelizer}) and plans ({@link AheadOfSave}),
 * waits until every rank has saved (a generation newer than the one before the change), reconfigures
 * (with the plan made ahead when the save matches it), reports, and clears the stop flag for the
 * relaunched ranks. A failure at any step clears the flag too, leaves the previous generation as it was.
 */
public final class ResourceChange implements Registry.Finishing {
    /** Where a change is; CANCELLED: taken back ({@code DELETE}, {@code tenplex cancel}) while it waited for the save. */
    public enum State { STOPPING, RECONFIGURING, DONE, FAILED, CANCELLED }

    /**
     * What the scheduler asked for, parsed and checked before anything happens.
     *
     * @param daemons the daemons of the change (worker to address; empty: the daemon's defaults)
     */
    public record Spec(List<Device> devices, int devicesPerWorker, ParallelConfig config, Parallelizer parallelizer,
            long memoryPerDevice, OptionalLong atStep, long saveTimeoutMillis,
            Map<Integer, java.net.InetSocketAddress> daemons, boolean recover, JsonNode from) {

        /**
         * Parses {@code devices} ([worker, local] pairs) or {@code size} with {@code devicesPerWorker}
         * (and {@code firstWorker}); optional {@code config} {@code {tp, pp, dp}}, {@code parallelizer}
         * ({@code {"table": {...}}} or {@code {"memoryPerDevice": bytes}}), {@code atStep},
         * {@code saveTimeoutSeconds} (600), {@code daemons}, {@code recover} (workers were lost: move
         * the current complete generation without waiting for a save, reading lost ranks from the
         * surviving copies) and {@code from} (the configuration the ranks run under, placed: a job
         * without a saved generation is then planned ahead); see {@link ChangeSpecJson}.
         */
        public static Spec parse(JsonNode b, Parallelizer stored) {
            return ChangeSpecJson.parse(b, stored);
        }
    }

    private final String job;
    private final String id;
    private final Spec spec;
    private final Jobs jobs;
    private final Generations generations;
    private final Map<Integer, java.net.InetSocketAddress> daemons;
    private final CompletableFuture<Void> finished = new CompletableFuture<>();
    private final long started = System.nanoTime();
    private final ChangeLog log;
    private final ChangeStopFlag stopFlag;
    private volatile State state = State.STOPPING;
    private volatile String error;
    private volatile ParallelConfig chosen;
    private volatile JsonNode fromConfig;
    private volatile long generation = -1;
    private volatile Reconfiguration reconfiguration;
    private volatile boolean cancelled;
    private List<CommitListener> listeners = List.of();
    private final ChangeTimes times = new ChangeTimes();
    private final ChangeReports reports = new ChangeReports();
    private volatile int fromWorld;

    private volatile long finishedAt;

    /** A change of {@code job}'s devices, run against this daemon's job lifecycle. */
    ResourceChange(String job, String id, Spec spec, Jobs jobs) {
        this.job = job;
        this.id = id;
        this.spec = spec;
        this.jobs = jobs;
        this.generations = jobs.generations();
        this.daemons = spec.daemons();
        this.log = new ChangeLog(job, id, started, () -> state);
        this.stopFlag = new ChangeStopFlag(job, jobs, daemons, log::event);
    }

    /** The job's last committed change (its ranks run under its configuration unless they saved since), or null. */
    volatile ResourceChangeStatus running;

    /** Who is told when the change has committed (before {@link #begin()}). */
    void listeners(List<CommitListener> l) {
        this.listeners = List.copyOf(l);
    }

    private void tellCommitted(ParallelConfig c) {
        for (CommitListener l : listeners) {
            try {
                String line = l.committed(job, c, spec.devices(), daemons);
                if (line != null) {
                    log.event(line);
                }
            } catch (Exception e) {
                log.event("the " + l.feature() + " did not follow the commit: " + e.getMessage());
            }
        }
    }

    @Override
    public long finishedAt() {
        return finishedAt;
    }

    public String id() {
        return id;
    }

    public State state() {
        return state;
    }

    public CompletableFuture<Void> finished() {
        return finished;
    }

    /**
     * Cancels the change while it waits for the ranks to save (the job ended first, or the scheduler
     * changed its mind); has no effect once the reconfiguration has started.
     *
     * @return whether the change was still waiting
     */
    boolean cancel() {
        if (state != State.STOPPING) {
            return false;
        }
        cancelled = true;
        generations.wake();
        return true;
    }

    boolean running() {
        return !finished.isDone();
    }

    private volatile long before = -1;
    /** A size-only change of a job with no model or rules stored: data-parallel, decided at {@link #begin()}. */
    volatile ParallelConfig dataParallel;
    /** Where the change is kept across a restart (null: not kept). */
    volatile ChangeJournal journal;

    /** The change was started again after a restart ({@code why}): its first event. */
    void restored(String why) {
        log.event(why);
    }

    /**
     * Raises the stop flag (on the caller's thread, so that it is up when the scheduler's request is
     * answered) and remembers the generation the save must be newer than.
     */
    void begin() {
        JobMetrics.RESOURCE_CHANGES.labels("requested").inc();
        before = generations.current(job).orElse(-1);
        if (dataParallel != null) {
            log.event("no model spec or partition rules stored with job " + job + ": a change of its size alone is a "
                    + "data-parallel change, to " + dataParallel);
        }
        String reason = "resource change " + id + " to " + spec.devices().size() + " devices";
        stopFlag.raise(spec.atStep(), reason);
        log.event("stop flag raised" + (spec.atStep().isPresent() ? " for step " + spec.atStep().getAsLong() : "")
                + "; waiting for every rank to save (generation after " + (before < 0 ? "none" : before) + ")");
    }

    /** Runs the rest of the lifecycle on the calling (background) thread, after {@link #begin()}. */
    void run() {
        try {
            long t = System.nanoTime();
            stopFlag.raisedRemotely();
            AheadOfSave.Planned ahead = null;
            if (spec.recover()) {
                current();
            } else {
                ahead = AheadOfSave.plan(jobs, job, before, running, spec, this::choose, daemons, log::event);
                awaitSave();
            }
            log.phase("stop", t);
            state = State.RECONFIGURING;
            t = System.nanoTime();
            ParallelConfig c = ahead != null ? ahead.config() : choose();
            chosen = c;
            Reconfiguration r = AheadOfSave.start(jobs, job, generation, c, spec.devices(), daemons, ahead, log::event);
            reconfiguration = r;
            times.planned(System.nanoTime() - t);
            log.event("reconfiguration " + r.id() + " started");
            r.finished().get();
            log.phase("reconfigure", t);
            if (r.state() != Reconfiguration.State.COMMITTED) {
                throw new IllegalStateException("reconfiguration " + r.id() + " " + r.state().name().toLowerCase()
                        + (r.error() != null ? ": " + r.error() : ""));
            }
            Map<String, Long> rp = r.describe().phaseMillis();
            times.committed(rp.getOrDefault("check", 0L) + rp.getOrDefault("execute", 0L), rp.getOrDefault("commit", 0L));
            times.slowMoves(slowMoves(r.describe().workers()));
            if (r.step() != generation) {
                log.event("generation " + generation + " could not be recovered: generation " + r.step() + " was instead");
                generation = r.step();
            }
            log.event("committed: " + new JobLayout(job).load() + " holds generation " + generation + " under " + c);
            tellCommitted(c);
            state = State.DONE;
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            error = cause.getMessage();
            boolean takenBack = cancelled && state == State.STOPPING;
            log.event(takenBack ? error : "failed: " + error);
            state = takenBack ? State.CANCELLED : State.FAILED;
        } finally {
            ended();
        }
    }

    /** The change ended (in any state): its flag comes down, nothing of it is kept, its waiters are answered. */
    private void ended() {
        stopFlag.clear();
        log.event("stop flag cleared");
        if (journal != null) {
            journal.ended(job, id);
        }
        log.phase("total", started);
        JobMetrics.RESOURCE_CHANGES.labels(state.name().toLowerCase(Locale.ROOT)).inc();
        finishedAt = System.nanoTime();
        finished.complete(null);
    }

    /** Waits until every rank has saved a generation newer than the one before the change. */
    private void awaitSave() throws Exception {
        OptionalLong g = generations.awaitNewer(job, before, spec.atStep().orElse(0), spec.saveTimeoutMillis(),
                () -> cancelled);
        if (g.isEmpty() && cancelled) {
            throw new IllegalStateException("cancelled before every rank had saved");
        }
        if (g.isEmpty()) {
            throw new IllegalStateException("the ranks of job " + job + " did not all save within "
                    + spec.saveTimeoutMillis() / 1000 + " s after the stop flag (is the job running and calling "
                    + "tenplex.should_stop?)");
        }
        fromWorld = generations.world(job, g.getAsLong()); // before the generation: a report of it checks the world
        generation = g.getAsLong();
        if (journal != null) {
            journal.saved(job, id, generation); // a restart from here moves this generation without another save
        }
        fromConfig = generations.config(job, generation);
        log.event("generation " + generation + " complete" + (fromConfig != null ? " under " + fromConfig : ""));
        if (fromConfig == null) {
            throw new IllegalStateException("generation " + generation + " was saved without its configuration");
        }
    }

    /** A recovery: the current complete generation, without waiting for the ranks (some are gone). */
    private void current() throws Exception {
        OptionalLong g = generations.current(job);
        if (g.isEmpty()) {
            throw new IllegalStateException("job " + job + " has no complete generation to recover from");
        }
        fromWorld = generations.world(job, g.getAsLong());
        generation = g.getAsLong();
        fromConfig = generations.config(job, generation);
        log.event("recovering generation " + generation + " without waiting for a save");
        if (fromConfig == null) {
            throw new IllegalStateException("generation " + generation + " was saved without its configuration");
        }
    }

    /** The configuration asked for, or the parallelizer's choice. */
    private ParallelConfig choose() {
        ParallelConfig c = spec.config() != null ? spec.config() : dataParallel;
        if (c == null) {
            Model model = jobs.storedModel(job);
            c = spec.parallelizer().choose(new Parallelizer.Request(spec.devices().size(), spec.devicesPerWorker(),
                    model, spec.memoryPerDevice()));
            log.event("parallelizer " + spec.parallelizer().name() + " chose " + c);
        }
        return c;
    }

    /** State, chosen configuration, phases, events and the reconfiguration's status. */
    public ResourceChangeStatus describe() {
        ParallelConfig c = chosen;
        Map<String, Long> phases = log.phases();
        List<String> happened = log.events();
        Reconfiguration r = reconfiguration;
        return new ResourceChangeStatus(id, job, state.name().toLowerCase(), error,
                spec.devices().stream().map(d -> List.of(d.worker(), d.local())).toList(),
                spec.atStep().isPresent() ? spec.atStep().getAsLong() : null, generation < 0 ? null : generation,
                fromConfig, c != null ? ParallelConfigJson.placement(c, spec.devices()) : null, phases, happened,
                r != null ? r.describe() : null, downtime());
    }

    /**
     * The downtime split of this change, joined from the ranks' marks of its generation (null before the
     * generation is known or while no rank has reported); the first complete one goes to {@code /metrics}.
     */
    public DowntimeSplit downtime() {
        ParallelConfig c = chosen;
        return c == null ? null : DowntimeMetrics.split(reports, generation, times, c.worldSize());
    }

    /** The generation it moved, or -1 before it is known. */
    long generation() {
        return generation;
    }

    /**
     * Whether it still waits for the ranks' save and {@code step} may be that save: newer than the generation
     * before the change, and at least the step it asked the ranks to stop at.
     */
    boolean awaitsSave(long step) {
        return state == State.STOPPING && generation < 0 && !spec.recover() && step > before
                && step >= spec.atStep().orElse(0);
    }

    /** The generation before the change (-1: none), for messages. */
    long before() {
        return before;
    }

    /** The ranks that saved its generation (0 before it is known). */
    int fromWorld() {
        return fromWorld;
    }

    /** The ranks of the configuration it chose (0 before it chose one). */
    int newWorld() {
        ParallelConfig c = chosen;
        return c == null ? 0 : c.worldSize();
    }

    /** By worker, the notes of the parts whose move took slower memory than it could have. */
    private static Map<Integer, String> slowMoves(Map<String, io.tenplex.jobs.reconfigure.ReconfigurationStatus.Worker> ws) {
        Map<Integer, String> out = new java.util.TreeMap<>();
        ws.forEach((w, s) -> {
            if (s.slowMemory() != null) {
                out.put(Integer.parseInt(w), s.slowMemory());
            }
        });
        return out;
    }

    ChangeTimes times() {
        return times;
    }

    /** The ranks' downtime reports it holds. */
    ChangeReports reports() {
        return reports;
    }
}
