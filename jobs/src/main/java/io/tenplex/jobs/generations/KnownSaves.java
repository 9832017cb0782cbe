package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Limits;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The saves a daemon knows of, per job and step: each step's progress (its world, configuration and the
 * ranks sealed anywhere in the cluster), created when a first rank is sealed or told of and checked
 * against what later seals claim; which of them are complete. Not thread-safe: {@link Generations}
 * guards it with its monitor.
 */
final class KnownSaves {
    private final TensorStore store;
    /** job to step to what is known of that step's save (sealed ranks anywhere in the cluster). */
    private final Map<String, TreeMap<Long, GenerationProgress>> jobs = new LinkedHashMap<>();

    KnownSaves(TensorStore store) {
        this.store = store;
    }

    /** @throws IllegalArgumentException for a negative step or a world outside [1, {@link Limits#MAX_RANKS}] */
    static void check(long step, int world) {
        if (step < 0) {
            throw new IllegalArgumentException("step " + step + " is negative");
        }
        if (world < 1 || world > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"world\" (the number of ranks that seal a save) must be in [1, "
                    + Limits.MAX_RANKS + "], got " + world);
        }
    }

    private static void checkRank(int rank, int world) {
        if (rank < 0 || rank >= world) {
            throw new IllegalArgumentException("rank " + rank + " is outside a world of " + world);
        }
    }

    /**
     * The step's progress, created on first use; checks that the world and ranks agree with it.
     *
     * @param current the job's current complete generation, asked only when the step is new
     */
    GenerationProgress progress(String job, long step, int world, JsonNode config, List<Integer> ranks,
            Supplier<OptionalLong> current) {
        TreeMap<Long, GenerationProgress> steps = jobs.computeIfAbsent(job, j -> new TreeMap<>());
        GenerationProgress p = steps.get(step);
        if (p != null && p.world != world) {
            throw StoreException.conflict("the save of step " + step + " of job " + job + " has " + p.world
                    + " ranks, not " + world);
        }
        ranks.forEach(r -> checkRank(r, world));
        if (p == null) {
            OptionalLong c = current.get();
            if (c.isPresent() && step <= c.getAsLong() && store.stat(Generations.generationDir(job, step)).isEmpty()) {
                throw StoreException.conflict("step " + step + " is not newer than the complete generation "
                        + c.getAsLong() + " of job " + job);
            }
            p = new GenerationProgress(world, config == null || config.isMissingNode() ? null : config);
            steps.put(step, p);
        }
        return p;
    }

    /** Records a step's progress as given (a generation taken back from the durable tier). */
    void put(String job, long step, GenerationProgress p) {
        jobs.computeIfAbsent(job, j -> new TreeMap<>()).put(step, p);
    }

    /** The steps known of a job (the map itself, or null when none is). */
    TreeMap<Long, GenerationProgress> steps(String job) {
        return jobs.get(job);
    }

    /** The steps known of a job (the map itself, or an empty one not kept when none is). */
    TreeMap<Long, GenerationProgress> of(String job) {
        return jobs.getOrDefault(job, new TreeMap<>());
    }

    OptionalLong newestComplete(String job) {
        TreeMap<Long, GenerationProgress> steps = jobs.get(job);
        if (steps != null) {
            for (Map.Entry<Long, GenerationProgress> e : steps.descendingMap().entrySet()) {
                if (e.getValue().complete) {
                    return OptionalLong.of(e.getKey());
                }
            }
        }
        return OptionalLong.empty();
    }

    /** The steps of the job's complete generations older than {@code step} known here, newest first. */
    List<Long> completeBefore(String job, long step) {
        TreeMap<Long, GenerationProgress> steps = jobs.get(job);
        if (steps == null) {
            return List.of();
        }
        List<Long> out = new ArrayList<>();
        steps.headMap(step, false).descendingMap().forEach((s, p) -> {
            if (p.complete) {
                out.add(s);
            }
        });
        return out;
    }

    /** The jobs with saves on record. */
    Set<String> jobs() {
        return Set.copyOf(jobs.keySet());
    }

    /** Forgets the job's saves' progress. */
    void forget(String job) {
        jobs.remove(job);
    }
}
