package io.tenplex.jobs;

import io.tenplex.store.StorePath;
import java.io.IOException;
import java.util.Set;
import java.util.function.IntFunction;

/**
 * The durable directories (L4) of other workers that this daemon can read, for a recovery around a
 * lost worker: only where every daemon's {@code --checkpoint-dir} is on storage all of them mount (a
 * shared file system, one directory per worker).
 */
public interface DurableCopies {
    /** No other worker's directory is reachable. */
    DurableCopies NONE = new DurableCopies() {
        @Override
        public boolean has(int worker, String job, long step) {
            return false;
        }

        @Override
        public Set<Integer> restore(int worker, String job, long step, IntFunction<StorePath> into) {
            return Set.of();
        }
    };

    /** Whether worker {@code worker}'s directory holds generation {@code step} of {@code job}, complete. */
    boolean has(int worker, String job, long step);

    /**
     * Reads the ranks of generation {@code step} that worker {@code worker} flushed into this daemon's
     * store, rank r's tree at {@code into.apply(r)}, every block's CRC32C checked; all or nothing.
     *
     * @return the ranks read (empty when the directory holds no such generation)
     * @throws IOException when the generation there is damaged or unreadable
     */
    Set<Integer> restore(int worker, String job, long step, IntFunction<StorePath> into) throws IOException;
}
