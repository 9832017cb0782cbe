package io.tenplex.datasets.streams;

import java.util.List;
import java.util.Map;

/**
 * How a daemon tells the other daemons of a job's stream what to do (the coordinator's calls).
 * Every call blocks (never on an event loop) and throws an unchecked exception on failure.
 */
public interface StreamPeers {
    /** Makes or replaces the job's stream at {@code peer}, its buffers empty and, when asked, frozen. */
    void configure(String peer, String job, StreamConfig config, boolean frozen);

    /** Freezes the job's buffers at {@code peer} and takes out every sample, by rank. */
    Map<Integer, List<Sample>> export(String peer, String job);

    /** Adds samples to the job's buffers of these ranks at {@code peer} (they stay frozen). */
    void importSamples(String peer, String job, Map<Integer, List<Sample>> byRank);

    /** The producers' closes counted at {@code peer} (rank 0's daemon counts them). */
    int closes(String peer, String job);

    /** Lets producers and readers in again at {@code peer}. */
    void unfreeze(String peer, String job);

    /** Production has ended: {@code peer}'s buffers drain. */
    void end(String peer, String job);

    /** Forgets the job's stream at {@code peer}. */
    void delete(String peer, String job);
}
