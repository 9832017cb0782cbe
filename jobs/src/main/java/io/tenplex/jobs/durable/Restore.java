package io.tenplex.jobs.durable;

import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.memory.OutOfBudgetException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts one job's durable generations back when the daemon starts: cleans the job's directory (flushes
 * cut short, expired generations), then restores the kept generations newest first, each verified
 * block by block; a damaged one is logged and skipped, so the job's current generation is the newest
 * intact one.
 */
final class Restore {
    private static final Logger LOG = LoggerFactory.getLogger(Restore.class);

    private final DurableDir dir;
    private final Restorer restorer;
    private final Generations generations;

    Restore(DurableDir dir, Restorer restorer, Generations generations) {
        this.dir = dir;
        this.restorer = restorer;
        this.generations = generations;
    }

    /** The steps restored (newest first) and the newest intact manifest (the next flush's base). */
    record Outcome(List<Long> steps, Optional<DurableManifest> base) {
    }

    Outcome job(String job, int defaultKeep) throws IOException {
        int keep = retention(job, defaultKeep);
        NavigableSet<Long> kept = Retention.apply(dir, job, keep, -1);
        List<Long> restored = new ArrayList<>();
        DurableManifest base = null;
        for (long step : kept.descendingSet()) {
            try {
                DurableManifest m = dir.read(job, step).orElseThrow();
                long bytes = restorer.restore(m);
                generations.restored(job, step, m.world(), m.config());
                generations.tiers().reached(job, step, Tiers.DURABLE);
                restored.add(step);
                base = base == null ? m : base;
                LOG.info("restored durable generation job={} step={} ranks={} bytes={}", job, step, m.ranks().keySet(),
                        bytes);
            } catch (DamagedGenerationException e) {
                generations.lost().lost(job, step, "durable copy damaged, not restored: " + e.getMessage());
                LOG.error("durable generation DAMAGED, not served (an older intact one is used): {}", e.getMessage());
            } catch (OutOfBudgetException e) {
                generations.lost().lost(job, step, "durable copy does not fit the memory budget, not restored: "
                        + e.getMessage());
                LOG.error("durable generation job={} step={} does not fit the memory budget, not restored: {}", job,
                        step, e.getMessage());
                break;
            } catch (IOException | RuntimeException e) {
                generations.lost().lost(job, step, "durable copy damaged (unreadable manifest), not restored: " + e);
                LOG.error("durable generation job={} step={} DAMAGED (unreadable manifest), not served: {}", job, step,
                        e.toString());
            }
        }
        warnUnflushed(job, restored);
        if (restored.isEmpty() && !kept.isEmpty()) {
            LOG.error("job={}: no intact durable generation among steps {}; the job has no checkpoint", job, kept);
        }
        return new Outcome(restored, Optional.ofNullable(base));
    }

    /** Says so when a generation newer than the one restored completed but could not be flushed (a full disk). */
    private void warnUnflushed(String job, List<Long> restored) {
        dir.unflushed(job).ifPresent(u -> {
            long lost = Long.parseLong(u[0].strip());
            if (restored.isEmpty() || lost > restored.get(0)) {
                generations.lost().lost(job, lost, "completed before the restart but not flushed to the durable "
                        + "directory (" + (u.length > 1 ? u[1].strip() : "no reason noted") + ")");
                LOG.warn("job={}: generation step={} completed before the restart but was NOT flushed ({}); the job "
                        + "resumes from {}", job, lost, u.length > 1 ? u[1].strip() : "no reason noted",
                        restored.isEmpty() ? "no checkpoint" : "step " + restored.get(0));
            }
        });
    }

    /** The job's retention as its newest manifest recorded it (restored into its tier settings with its levels). */
    private int retention(String job, int defaultKeep) throws IOException {
        for (long step : dir.steps(job).descendingSet()) {
            try {
                Optional<DurableManifest> m = dir.read(job, step);
                if (m.isPresent()) {
                    int keep = m.get().durableKeep();
                    Tiers.Settings s = generations.tiers().settings(job);
                    DurableManifest.Levels l = m.get().levels() != null ? m.get().levels()
                            : new DurableManifest.Levels(s.partners(), s.groupSize(), s.parity());
                    Tiers.Settings restored = new Tiers.Settings(l.partners(), l.groupSize(), l.parity(),
                            keep > 0 ? keep : s.durableKeep());
                    if (!restored.equals(s)) {
                        generations.tiers().set(job, restored);
                    }
                    return keep > 0 ? keep : Math.max(1, defaultKeep);
                }
            } catch (IOException e) {
                LOG.warn("job={} step={}: unreadable manifest: {}", job, step, e.toString());
            }
        }
        return Math.max(1, defaultKeep);
    }
}
