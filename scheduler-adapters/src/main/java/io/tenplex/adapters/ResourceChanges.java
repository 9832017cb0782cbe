package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.adapters.downtime.DowntimeMetrics;
import io.tenplex.adapters.downtime.RankReport;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.reconfigure.Registry;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.store.StoreException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * The resource changes of one daemon's jobs (a client of the {@link Jobs} facade): at most one runs
 * per job; finished ones are forgotten after a retention ({@link Registry}).
 */
public final class ResourceChanges {
    /** A parallelizer's answer: the configuration and who chose it ({@code request} when it was given). */
    public record Choice(ParallelConfig config, String by) {
    }

    private final Jobs jobs;
    private final Registry<ResourceChange> changes;
    private final List<CommitListener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Where the changes are kept across a restart (null: not kept). */
    private volatile ChangeJournal journal;

    public ResourceChanges(Jobs jobs) {
        this(jobs, Jobs.RETENTION, System::nanoTime);
    }

    ResourceChanges(Jobs jobs, Duration retention, LongSupplier clock) {
        this.jobs = jobs;
        this.changes = new Registry<>(retention, Jobs.MAX_FINISHED, clock);
        DowntimeMetrics.atStart();
    }

    /**
     * Checks the request, raises the stop flag, and runs the rest of the change in the background.
     *
     * @throws StoreException conflict while another change of the job runs
     */
    public synchronized ResourceChange start(String job, JsonNode body) {
        return start(job, body, jobs.newId("r"), null);
    }

    /** As {@link #start(String, JsonNode)} with the change's {@code id}; {@code restored}: why it is started again, or null. */
    private ResourceChange start(String job, JsonNode body, String id, String restored) {
        ResourceChange.Spec spec = spec(job, body);
        for (ResourceChange c : changes.of(job)) {
            if (c.running()) {
                throw StoreException.conflict("resource change " + c.id() + " of job " + job + " is still running ("
                        + c.describe().state() + "); cancel it with `tenplex cancel " + job + "` (DELETE "
                        + new io.tenplex.jobs.common.JobLayout(job).apiResourceChange(c.id()) + ")");
            }
        }
        // a size-only change of a job without a description: data-parallel, or refused now (nothing raised yet)
        io.tenplex.ptc.ParallelConfig dataParallel = SizeOnly.dataParallel(job, spec, jobs,
                jobs.generations().current(job).orElse(-1));
        ResourceChange c = new ResourceChange(job, id, spec, jobs);
        c.dataParallel = dataParallel;
        ChangeJournal j = journal;
        if (j != null && restored == null) {
            j.started(job, id, body); // kept before anything is raised or answered
        }
        c.journal = j;
        if (restored != null) {
            c.restored(restored);
        }
        c.running = lastCommitted(job);
        changes.put(job, c.id(), c);
        c.listeners(listeners);
        c.begin();
        jobs.executors().background().execute(c::run);
        return c;
    }

    /**
     * The configuration and generation of the job's last change that committed here (the ranks run
     * under it until they save a newer generation), or null.
     */
    private ResourceChangeStatus lastCommitted(String job) {
        ResourceChangeStatus last = null;
        for (ResourceChange c : changes.of(job)) {
            if (c.state() == ResourceChange.State.DONE) {
                last = c.describe();
            }
        }
        return last;
    }

    /**
     * Keeps every change from now on in {@code j} and starts again the ones it kept before this daemon
     * started: one that waited for the save waits again, one whose save was complete moves the job's current
     * generation ({@code recover}); one that cannot start again (its request refused now) is logged and dropped.
     */
    public synchronized ResourceChanges withJournal(ChangeJournal j) {
        journal = j;
        if (j == null) {
            return this;
        }
        for (ChangeJournal.Pending p : j.pending()) {
            JsonNode body = p.body();
            if (p.generation() >= 0 && body.isObject()) {
                ((com.fasterxml.jackson.databind.node.ObjectNode) body).put("recover", true);
            }
            dropBadFrom(p, body);
            try {
                start(p.job(), body, p.id(), p.generation() >= 0 ? "started again after the daemon restarted: its save "
                        + "(generation " + p.generation() + ") was complete, the job's current generation is moved"
                        : "started again after the daemon restarted (kept in the checkpoint directory)");
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(ResourceChanges.class).warn("resource change {} of job {} kept from "
                        + "before the restart cannot start again: {}", p.id(), p.job(), e.getMessage());
                j.ended(p.job(), p.id());
            }
        }
        return this;
    }

    /**
     * A kept change's {@code from} that is no longer a valid configuration (limits changed since) is left
     * out, logged: it only served to plan ahead, and the change must not be dropped for it.
     */
    private static void dropBadFrom(ChangeJournal.Pending p, JsonNode body) {
        if (!body.isObject() || !body.hasNonNull("from")) {
            return;
        }
        try {
            io.tenplex.jobs.common.ConfigJson.placed(body.get("from"), "from");
        } catch (RuntimeException e) {
            ((com.fasterxml.jackson.databind.node.ObjectNode) body).remove("from");
            org.slf4j.LoggerFactory.getLogger(ResourceChanges.class).warn("resource change {} of job {} kept from "
                    + "before the restart: its \"from\" is left out ({}); it plans after the save", p.id(), p.job(),
                    e.getMessage());
        }
    }

    /** Tells {@code l} of every change that commits from now on. */
    public ResourceChanges addCommitListener(CommitListener l) {
        listeners.add(l);
        return this;
    }

    /** @throws StoreException not found */
    public ResourceChange get(String job, String id) {
        changes.prune();
        return changes.get(job, id).orElseThrow(() -> StoreException.notFound("no resource change " + id + " of job "
                + job));
    }

    /**
     * Cancels a change that still waits for the ranks to save; completes with its final description.
     *
     * @throws StoreException conflict when it already reconfigures
     */
    public CompletableFuture<ResourceChangeStatus> cancel(String job, String id) {
        ResourceChange c = get(job, id);
        if (!c.cancel() && c.running()) {
            throw StoreException.conflict("resource change " + id + " of job " + job + " is already reconfiguring: it "
                    + "ends by itself (committed or aborted); follow it with GET " + new io.tenplex.jobs.common.JobLayout(job)
                    .apiResourceChange(id) + "?wait=true");
        }
        return c.finished().thenApply(v -> c.describe());
    }

    /** The configuration a change with this request would choose (nothing else happens). */
    public Choice parallelize(String job, JsonNode body) {
        ResourceChange.Spec spec = spec(job, body);
        if (spec.config() != null) {
            return new Choice(spec.config(), "request");
        }
        Model model = spec.parallelizer() instanceof ParaConfigTable ? null : jobs.storedModel(job);
        return new Choice(spec.parallelizer().choose(new Parallelizer.Request(spec.devices().size(),
                spec.devicesPerWorker(), model, spec.memoryPerDevice())), spec.parallelizer().name());
    }

    /** The changes of {@code job} kept now (running ones and recently finished ones), oldest first. */
    public java.util.List<ResourceChange> of(String job) {
        changes.prune();
        return java.util.List.copyOf(changes.of(job));
    }

    /** Forgets the finished changes of a job (with their ranks' downtime reports). */
    public void forget(String job) {
        changes.forget(job);
        ChangeJournal j = journal;
        if (j != null) {
            j.forget(job);
        }
    }

    /**
     * Keeps a rank's downtime report with the changes of {@code job} it belongs to ({@link DowntimeClaims}):
     * those kept here that moved its step, or the one waiting for a save of that step by that rank. They
     * join it into their split at once, so that a complete split reaches {@code /metrics} with its last
     * report. A refused report changes nothing.
     *
     * @return the ids of the changes that kept it (never empty)
     * @throws StoreException not found: no change of the job moved the step; conflict: the rank reported a
     *     phase with another time, or a new rank's phase before the change chose its configuration
     * @throws IllegalArgumentException a rank outside the change's world, a time outside its window
     */
    public synchronized List<String> reportDowntime(String job, RankReport r) {
        return DowntimeClaims.keep(job, of(job), r, jobs.generations());
    }

    /** How many changes of {@code job} are kept. */
    public int kept(String job) {
        return changes.of(job).size();
    }

    /** A request, with the para-config table stored with the job as its default parallelizer. */
    private ResourceChange.Spec spec(String job, JsonNode body) {
        Parallelizer stored = jobs.paraConfig(job).map(ParaConfigTable::parse).orElse(null);
        return ResourceChange.Spec.parse(body, stored);
    }
}
