package io.tenplex.datasets.streams;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How a daemon tells the other daemons of a job's stream what to do (the coordinator's calls).
 * Every call blocks (never on an event loop) and throws an unchecked exception on failure: a
 * {@link io.tenplex.store.StoreException} of kind {@code CONFLICT} when the peer refused the step
 * (another re-partitioning holds the stream there), else one naming the peer that failed.
 */
public interface StreamPeers {
    /** Checks that {@code peer} answers (before a re-partitioning gives it ranks). */
    void ping(String peer);

    /** Makes the job's stream at {@code peer}; a conflict if it has one. */
    void create(String peer, String job, StreamConfig config);

    /**
     * A re-partitioning's config step at {@code peer}: replaces the frozen stream (its buffers empty
     * and, when asked, frozen) or makes it; the config it already has changes nothing.
     */
    void configure(String peer, String job, StreamConfig config, boolean frozen);

    /**
     * Freezes the job's buffers at {@code peer} (only if its ranks are {@code expectedRanks}) and
     * takes out every sample, handing them to {@code page} by rank, one bounded message at a time.
     */
    void export(String peer, String job, List<String> expectedRanks, Consumer<Map<Integer, List<Sample>>> page);

    /** Adds samples to the job's buffers of these ranks at {@code peer} (they stay frozen). */
    void importSamples(String peer, String job, Map<Integer, List<Sample>> byRank);

    /**
     * Gives samples back to the buffer of {@code rank} at {@code peer}, as a relaying daemon gives
     * back a batch its reader never got (the peer undoes one read of each): one message, of at most
     * {@link StreamService#MESSAGE_BYTES} of samples (the caller splits them).
     */
    void giveBack(String peer, String job, int rank, List<Sample> samples);

    /** The producers' closes counted at {@code peer} (rank 0's daemon counts them). */
    int closes(String peer, String job);

    /** Lets producers and readers in again at {@code peer}. */
    void unfreeze(String peer, String job);

    /** Production has ended: {@code peer}'s buffers drain. */
    void end(String peer, String job);

    /** Forgets the job's stream at {@code peer}. */
    void delete(String peer, String job);
}
