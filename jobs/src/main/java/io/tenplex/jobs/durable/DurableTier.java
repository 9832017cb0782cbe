package io.tenplex.jobs.durable;

import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
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
 * retention, keeps the job's control files ({@link ControlFiles}: model spec, rules, run record) and
 * records {@link Tiers#DURABLE}; {@link #restore()} puts the durable generations and their control
 * files back when the daemon starts. Flushes run one at a time.
 */
public final class DurableTier implements Generations.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(DurableTier.class);
    /** The daemon's default retention with a checkpoint directory. */
    public static final int DEFAULT_KEEP = 2;

    private final DurableDir dir;
    private final Generations generations;
    private final Flusher flusher;
    private final Restore restore;
    private final ControlFiles control;
    private final Executor work;
    /** job to its last flushed (or restored) manifest: the base of the next differential flush. */
    private final Map<String, DurableManifest> last = new ConcurrentHashMap<>();
    private final Map<String, FlushStats> lastStats = new ConcurrentHashMap<>();
    private final Map<String, FlushCounts> counts = new ConcurrentHashMap<>();

    /**
     * @param work where flushes run (one at a time; a single-thread executor keeps them in order)
     * @param repair where damaged blocks are fetched from at restore
     */
    public DurableTier(Path directory, TensorStore store, Generations generations, Executor work, BlockRepair repair) {
        this.dir = new DurableDir(directory);
        this.generations = generations;
        this.flusher = new Flusher(store, dir);
        this.restore = new Restore(dir, new Restorer(store, dir, repair), generations);
        this.control = new ControlFiles(dir, store);
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
    public Map<String, List<Long>> restore() throws IOException {
        Map<String, List<Long>> out = new java.util.LinkedHashMap<>();
        for (String job : dir.jobs()) {
            Restore.Outcome o = restore.job(job, keep(job));
            o.base().ifPresent(m -> last.put(job, m));
            if (!o.steps().isEmpty()) {
                out.put(job, o.steps());
                List<String> files = control.restore(job);
                if (!files.isEmpty()) {
                    LOG.info("control files of job {} restored: {}", job, files);
                }
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

    /**
     * Flushes one generation now (on the caller's thread), then applies retention. When the disk (or a
     * quota) is full, the job's oldest durable generation is removed to make room and the flush tried
     * again, as long as a generation older than the newest durable one is left: the newest is never
     * removed. A flush that fails all the same is counted, noted in the generation's status
     * ({@code levelDetails.durableFailed}) and on disk, so a restart that resumes from an older step says so.
     */
    synchronized Optional<FlushStats> flush(String job, long step) {
        int keep = keep(job);
        FlushCounts tally = counts.computeIfAbsent(job, j -> new FlushCounts());
        DurableManifest base = last.get(job);
        if (base != null && base.step() >= step) {
            return Optional.empty(); // already flushed (or a newer one is)
        }
        int evicted = 0;
        while (true) {
            try {
                Flusher.Result r = flusher.flush(job, step, base, generations.tiers().settings(job));
                control.keep(job); // before the generation is reported durable: a restart that finds it finds them
                last.put(job, r.manifest());
                lastStats.put(job, r.stats());
                tally.written.incrementAndGet();
                tally.bytesWritten.addAndGet(r.stats().bytesWritten());
                Map<String, Long> details = new java.util.HashMap<>(r.stats().asMap());
                details.put("evicted", (long) evicted);
                generations.tiers().reached(job, step, Tiers.DURABLE, details);
                LOG.info("durable flush {}{}", r.stats().describe(), evicted > 0 ? " evicted=" + evicted : "");
                Retention.apply(dir, job, keep, -1);
                dir.clearUnflushed(job);
                return Optional.of(r.stats());
            } catch (StoreException e) {
                LOG.warn("durable flush skipped: job={} step={}: the generation left this daemon before it was written "
                        + "({})", job, step, e.getMessage());
                return Optional.empty();
            } catch (IOException | RuntimeException e) {
                discard(job, step);
                boolean full = DiskFull.is(e);
                if (full && makeRoom(job, step)) {
                    evicted++;
                    tally.evicted.incrementAndGet();
                    continue;
                }
                failed(job, step, e, full, evicted, tally);
                return Optional.empty();
            }
        }
    }

    /**
     * Removes the job's oldest durable generation (manifest first, then every pack nothing kept refers
     * to) when one older than the newest is left. @return whether one was removed
     */
    private boolean makeRoom(String job, long step) {
        try {
            java.util.TreeSet<Long> durable = new java.util.TreeSet<>();
            for (long s : dir.steps(job)) {
                if (s != step && dir.complete(job, s)) {
                    durable.add(s);
                }
            }
            if (durable.size() < 2) {
                return false;
            }
            Retention.apply(dir, job, durable.size() - 1, step);
            boolean removed = !dir.complete(job, durable.first());
            if (removed) {
                LOG.warn("durable flush of job={} step={}: no space left in {}; removed the oldest durable generation "
                        + "step={} to make room (kept {}) and trying again", job, step, dir.root(), durable.first(),
                        durable.tailSet(durable.first(), false));
            }
            return removed;
        } catch (IOException | RuntimeException e) {
            LOG.warn("durable flush of job={} step={}: could not make room: {}", job, step, e.toString());
            return false;
        }
    }

    private void failed(String job, long step, Exception e, boolean full, int evicted, FlushCounts tally) {
        (full ? tally.noSpace : tally.failed).incrementAndGet();
        DurableManifest newest = last.get(job);
        String resumes = newest == null ? "no durable generation: a restart finds no checkpoint"
                : "the newest durable generation is step " + newest.step() + ": a restart resumes from it";
        LOG.error("durable flush FAILED: job={} step={}{}: {}; {}", job, step, full ? " (no space left, "
                + evicted + " older generations removed, only the newest durable one is left)" : "", e.toString(),
                resumes);
        generations.tiers().noted(job, step, "durableFailed", Map.of("noSpace", full ? 1L : 0L, "evicted",
                (long) evicted, "newestDurableStep", newest == null ? -1L : newest.step()));
        dir.noteUnflushed(job, step, e.toString());
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

    /**
     * Removes the job's durable files (in order with the flushes: one running ends first) and forgets
     * it, so a restart restores nothing of it and a new job of the name starts with a full flush.
     *
     * @return the bytes removed from disk
     */
    public long remove(String job) throws IOException, InterruptedException {
        java.util.concurrent.CompletableFuture<Long> done = new java.util.concurrent.CompletableFuture<>();
        work.execute(() -> {
            synchronized (this) {
                try {
                    long bytes = dir.deleteJob(job);
                    last.remove(job);
                    lastStats.remove(job);
                    counts.remove(job);
                    LOG.info("durable files removed job={} bytes={} dir={}", job, bytes, dir.root());
                    done.complete(bytes);
                } catch (IOException | RuntimeException e) {
                    done.completeExceptionally(e);
                }
            }
        });
        try {
            return done.get();
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }

    /** Per job, the flushes here since the daemon started. */
    public Map<String, FlushCounts> counts() {
        return Map.copyOf(counts);
    }

    /** The jobs with a durable generation here (restored or flushed). */
    public java.util.Set<String> jobs() {
        return java.util.Set.copyOf(last.keySet());
    }

    /** The step of the job's newest durable generation here (what a restart resumes from), if any. */
    public java.util.OptionalLong newestDurable(String job) {
        DurableManifest m = last.get(job);
        return m == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(m.step());
    }

    /** What the job's last flush here wrote, if any. */
    public Optional<FlushStats> lastFlush(String job) {
        return Optional.ofNullable(lastStats.get(job));
    }
}
