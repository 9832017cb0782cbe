package io.tenplex.jobs.generations;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.OptionalLong;

/**
 * What one rank of a job loads on this daemon: the tree at {@code path}, saved at {@code step}, from
 * {@code source} ({@link #GENERATION}: the rank's tree of the latest complete generation, for a job
 * restarted on the same resources; {@link #RECONFIGURATION}: {@code /job/<job>/load/<rank>}, what the
 * last reconfiguration prepared). The reconfiguration's output wins only when the step it was made
 * from ({@code /job/<job>/iter}) is not older than the latest complete generation.
 */
public record LoadChoice(String path, long step, String source) {
    public static final String GENERATION = "generation";
    public static final String RECONFIGURATION = "reconfiguration";

    /**
     * Chooses what {@code rank} of {@code job} loads from this daemon's store.
     *
     * @throws StoreException not found when there is nothing to load here for the rank
     */
    public static LoadChoice choose(TensorStore store, Generations generations, String job, int rank) {
        if (rank < 0 || rank >= Limits.MAX_RANKS) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + Limits.MAX_RANKS + ")");
        }
        JobLayout layout = new JobLayout(job);
        OptionalLong prepared = prepared(store, layout, rank);
        OptionalLong current = generations.current(job);
        if (prepared.isPresent() && (current.isEmpty() || prepared.getAsLong() >= current.getAsLong())) {
            return new LoadChoice(layout.loadRank(rank).toString(), prepared.getAsLong(), RECONFIGURATION);
        }
        if (current.isEmpty()) {
            throw StoreException.notFound("nothing to load for rank " + rank + " of job " + job
                    + ": no complete generation and no reconfiguration output on this daemon");
        }
        long step = current.getAsLong();
        StorePath tree = layout.generation(step).child(Integer.toString(rank));
        if (store.stat(tree).isEmpty()) {
            throw StoreException.notFound("generation " + step + " of job " + job + " is the latest complete one, but"
                    + " rank " + rank + "'s state of it is not on this daemon"
                    + (prepared.isPresent() ? " (the reconfiguration output here is older: step "
                            + prepared.getAsLong() + ")" : ""));
        }
        return new LoadChoice(tree.toString(), step, GENERATION);
    }

    /** The step of the reconfiguration output prepared for {@code rank}, when there is one. */
    private static OptionalLong prepared(TensorStore store, JobLayout layout, int rank) {
        if (store.stat(layout.loadRank(rank)).isEmpty()) {
            return OptionalLong.empty();
        }
        return SmallFiles.read(store, layout.iter()).map(s -> OptionalLong.of(Long.parseLong(s.strip())))
                .orElse(OptionalLong.empty());
    }
}
