package io.tenplex.jobs.tiers;

import java.io.IOException;
import java.util.Set;

/**
 * Where the ranks of a lost worker are read from when solving them from parity fails once the
 * rebuild is under way ({@link ErasureRebuild#start}): the lost worker's durable directory (L4).
 */
public interface RebuildFallback {
    /** No other level: a failed rebuild fails its ranks. */
    RebuildFallback NONE = (worker, ranks) -> false;

    /**
     * Reads {@code ranks} of lost worker {@code worker} into this daemon's replica tree
     * ({@code replicas/<step>/<rank>}), all or nothing, every block checked.
     *
     * @return whether they were read (false when no durable copy holds them)
     * @throws IOException when the copy is damaged or unreadable
     */
    boolean read(int worker, Set<Integer> ranks) throws IOException;
}
