package io.tenplex.jobs.generations;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.Entry;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.TreeSet;

/** A job's generations as {@code GET .../generations} reports them: what a daemon was told and what it holds. */
final class GenerationsReport {
    private GenerationsReport() {
    }

    /** What this daemon knows of a job's generations (its store, and the seals it was told of). */
    static GenerationsStatus describe(TensorStore store, Tiers tiers, String job, OptionalLong current,
            TreeMap<Long, GenerationProgress> known, TreeMap<Long, String> lost) {
        TreeSet<Long> steps = new TreeSet<>(known.keySet());
        try {
            store.list(new JobLayout(job).generations(), false).stream().map(Entry::name)
                    .map(JobLayout::step).filter(java.util.OptionalLong::isPresent)
                    .forEach(n -> steps.add(n.getAsLong()));
        } catch (StoreException e) {
            // no generations on this daemon
        }
        List<GenerationsStatus.Generation> list = new ArrayList<>();
        steps.addAll(lost.keySet());
        for (long step : steps) {
            list.add(lost.containsKey(step) && !known.containsKey(step) ? GenerationsStatus.Generation.lost(step,
                    lost.get(step)) : describe(store, tiers, job, step, known.get(step)));
        }
        return new GenerationsStatus(current.isPresent() ? current.getAsLong() : null, list);
    }

    /** One step: what this daemon was told of it ({@code p}, or null), and the ranks in its store. */
    private static GenerationsStatus.Generation describe(TensorStore store, Tiers tiers, String job, long step,
            GenerationProgress p) {
        StorePath dir = Generations.generationDir(job, step);
        List<Integer> local;
        try {
            local = store.list(dir, false).stream().map(Entry::name).filter(Generations::numeric)
                    .map(Integer::parseInt).sorted().toList();
        } catch (StoreException e) {
            local = List.of();
        }
        List<String> levels = tiers.levels(job, step);
        if (p == null) {
            return new GenerationsStatus.Generation(step, store.stat(dir.child("generation.json")).isPresent(), null,
                    null, null, local, levels, tiers.details(job, step), null);
        }
        return new GenerationsStatus.Generation(step, p.complete, p.world, List.copyOf(p.sealed), p.config, local,
                levels, tiers.details(job, step), null);
    }
}
