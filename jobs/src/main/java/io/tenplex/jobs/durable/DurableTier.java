package io.tenplex.jobs.durable;

import io.tenplex.jobs.Generations;
import io.tenplex.jobs.Tiers;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * L4, the durable tier of one daemon: flushes every complete generation of a job whose
 * {@code durableKeep} is positive to {@code DIR/jobs/<job>/} on a background executor (never on the
 * thread that completed it), differentially against the job's last flushed generation, then applies
 * retention and records {@link Tiers#DURABLE}; {@link #restore()} puts the durable generations back
 * when the daemon starts. Flushes run one at a time.
 */
public final class DurableTier implements Generations.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(DurableTier.class);
    /** The daemon's default retention with a checkpoint directory. */
    public static final int DEFAULT_KEEP = 2;

    private final DurableDir dir;
    private final Generations generations;
    private final Flusher flusher;
    private final Restore restore;
    private final Executor work;
    /** job to its last flushed (or restored) manifest: the base of the next differential flush. */
    private final Map<String, DurableManifest> last = new ConcurrentHashMap<>();
    private final Map<String, FlushStats> lastStats = new ConcurrentHashMap<>();

    /**
     * @param work where flushes run (one at a time; a single-thread executor keeps them in order)
     * @param repair where damaged blocks are fetched from at restore
     */
    public DurableTier(Path directory, TensorStore store, Generations generations, Executor work, BlockRepair repair) {
        this.dir = new DurableDir(directory);
        this.generations = generations;
        this.flusher = new Flusher(store, dir);
        this.restore = new Restore(dir, new Restorer(store, dir, repair), generations);
        this.work = work;
    }

    /** The directory's path. */
    public Path directory() {
        return dir.root();
    }

    /**
     * Removes flushes cut short and restores every job's durable generations into the store and the
     * generations (call before the daemon serves requests).
     *
     * @return per job, the steps restored
     */
    public Map<String, java.util.List<Long>> restore() throws IOException {
        Map<String, java.util.List<Long>> out = new java.util.LinkedHashMap<>();
        for (String job : dir.jobs()) {
            Restore.Outcome o = restore.job(job, keep(job));
            o.base().ifPresent(m -> last.put(job, m));
            if (!o.steps().isEmpty()) {
                out.put(job, o.steps());
            }
        }
        return out;
    }

    private int keep(String job) {
        return generations.tiers().settings(job).durableKeep();
    }

    @Override
    public void completed(String job, long step) {
        if (keep(job) <= 0) {
            return;
        }
        try {
            work.execute(() -> flush(job, step));
        } catch (RejectedExecutionException e) {
            LOG.warn("durable flush not started (shutting down): job={} step={}", job, step);
        }
    }

    /**
     * A recovery went back to an older generation: {@code step} is deleted from disk too (manifest
     * first), so a restart does not bring it back, and the next flush is differential against the
     * newest durable generation left. Runs in order with the flushes.
     */
    @Override
    public void superseded(String job, long step) {
        try {
            work.execute(() -> dropFromDisk(job, step));
        } catch (RejectedExecutionException e) {
            LOG.warn("superseded durable generation not deleted (shutting down): job={} step={}", job, step);
        }
    }

    private synchronized void dropFromDisk(String job, long step) {
        try {
            dir.deleteManifest(job, step);
            dir.deleteGeneration(job, step);
            DurableManifest base = last.get(job);
            if (base != null && base.step() >= step) {
                last.remove(job);
                for (long s : dir.steps(job).headSet(step, false).descendingSet()) {
                    Optional<DurableManifest> m = dir.read(job, s);
                    if (m.isPresent()) {
                        last.put(job, m.get());
                        break;
                    }
                }
            }
            LOG.info("durable generation superseded job={} step={}: deleted from {}", job, step, dir.root());
        } catch (IOException | RuntimeException e) {
            LOG.warn("superseded durable generation job={} step={} not deleted: {}", job, step, e.toString());
        }
    }

    /** Flushes one generation now (on the caller's thread), then applies retention. */
    synchronized Optional<FlushStats> flush(String job, long step) {
        int keep = keep(job);
        try {
            DurableManifest base = last.get(job);
            if (base != null && base.step() >= step) {
                return Optional.empty(); // already flushed (or a newer one is)
            }
            Flusher.Result r = flusher.flush(job, step, base, generations.tiers().settings(job));
            last.put(job, r.manifest());
            lastStats.put(job, r.stats());
            generations.tiers().reached(job, step, Tiers.DURABLE, r.stats().asMap());
            LOG.info("durable flush {}", r.stats().describe());
            Retention.apply(dir, job, keep, -1);
            return Optional.of(r.stats());
        } catch (StoreException e) {
            LOG.warn("durable flush skipped: job={} step={}: the generation left this daemon before it was written ({})",
                    job, step, e.getMessage());
        } catch (IOException | RuntimeException e) {
            LOG.error("durable flush failed: job={} step={}: {}", job, step, e.toString());
            discard(job, step);
        }
        return Optional.empty();
    }

    /** Removes what a failed flush left (nothing refers to it: it has no manifest). */
    private void discard(String job, long step) {
        try {
            if (!dir.complete(job, step)) {
                dir.deleteGeneration(job, step);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("could not remove the cut-short flush job={} step={}: {}", job, step, e.toString());
        }
    }

    /** What the job's last flush here wrote, if any. */
    public Optional<FlushStats> lastFlush(String job) {
        return Optional.ofNullable(lastStats.get(job));
    }
}
