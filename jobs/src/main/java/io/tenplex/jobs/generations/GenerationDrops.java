package io.tenplex.jobs.generations;

import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Dropping generations from this daemon: when one completes, the complete ones older than the one
 * before it; when a recovery goes back to an older one, those after it (superseded). The levels, the
 * metrics and the listeners are told. Called while {@link Generations} holds its monitor.
 */
final class GenerationDrops {
    /** Its log lines are the generations' (as before). */
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Generations.class);

    private final TensorStore store;
    private final KnownSaves saves;
    private final GenerationFiles files;
    private final Tiers tiers;
    private final LostGenerations lost;
    private final List<Generations.Listener> listeners;

    /** @param listeners the generations' listeners (the list itself: later subscribers are told too) */
    GenerationDrops(TensorStore store, KnownSaves saves, GenerationFiles files, Tiers tiers, LostGenerations lost,
            List<Generations.Listener> listeners) {
        this.store = store;
        this.saves = saves;
        this.files = files;
        this.tiers = tiers;
        this.lost = lost;
        this.listeners = listeners;
    }

    /** Generation {@code step} completed: keeps it and {@code previous}, drops the older complete ones. */
    void olderThan(String job, long step, OptionalLong previous) {
        TreeMap<Long, GenerationProgress> steps = saves.steps(job);
        for (Long s : new ArrayList<>(steps.headMap(step).keySet())) {
            if (previous.isPresent() && s == previous.getAsLong()) {
                continue;
            }
            steps.remove(s);
            try {
                store.delete(Generations.generationDir(job, s));
                tiers.dropped(job, s);
                JobMetrics.GENERATIONS.labels("dropped").inc();
                LOG.info("generation dropped job={} step={}", job, s);
                listeners.forEach(l -> l.dropped(job, s));
            } catch (StoreException e) {
                // an incomplete older save that left nothing on this daemon
            }
        }
    }

    /**
     * Drops generation {@code step}, newer than {@code back}, that a recovery went back from; the
     * current generation becomes {@code back}.
     *
     * @param current the job's current generation, asked once the listeners were told
     */
    void supersede(String job, long step, long back, Supplier<OptionalLong> current) {
        saves.of(job).remove(step);
        try {
            store.delete(Generations.generationDir(job, step));
        } catch (StoreException e) {
            // nothing of it on this daemon
        }
        tiers.dropped(job, step);
        listeners.forEach(l -> l.superseded(job, step));
        if (current.get().orElse(-1) >= step) {
            files.setCurrent(job, back);
        }
        lost.lost(job, step, "superseded: the job went back to generation " + back);
        LOG.info("generation superseded job={} step={}: the job went back to generation {}", job, step, back);
    }
}
