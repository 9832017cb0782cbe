package io.tenplex.jobs.durable;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.util.Set;
import java.util.function.IntFunction;

/**
 * The durable directories (L4) of other workers that this daemon can read, for a recovery around a
 * lost worker: only where every daemon's {@code --checkpoint-dir} is on storage all of them mount (a
 * shared file system, one directory per worker). Their manifests are untrusted input: a directory
 * holds a generation only when its manifest has the generation's world and configuration and every
 * rank asked for, and only those ranks are ever read.
 */
public interface DurableCopies {
    /** No other worker's directory is reachable. */
    DurableCopies NONE = new DurableCopies() {
        @Override
        public boolean has(int worker, String job, long step, Wanted wanted) {
            return false;
        }

        @Override
        public boolean restore(int worker, String job, long step, Wanted wanted, IntFunction<StorePath> into) {
            return false;
        }
    };

    /**
     * What a recovery needs of a lost worker's durable generation.
     *
     * @param world the generation's number of ranks
     * @param config the generation's configuration (null when it was saved without one)
     * @param ranks the ranks the lost worker held in it
     */
    record Wanted(int world, JsonNode config, Set<Integer> ranks) {
        public Wanted {
            ranks = Set.copyOf(ranks);
        }
    }

    /** Whether worker {@code worker}'s directory holds generation {@code step} of {@code job}, complete, with {@code wanted}. */
    boolean has(int worker, String job, long step, Wanted wanted) throws IOException;

    /**
     * Reads the wanted ranks of generation {@code step} that worker {@code worker} flushed into this
     * daemon's store, rank r's tree at {@code into.apply(r)}, every block's CRC32C checked; all or
     * nothing, and no other rank of its manifest.
     *
     * @return whether they were read (false when the directory holds no such generation)
     * @throws IOException when the generation there is damaged or unreadable
     */
    boolean restore(int worker, String job, long step, Wanted wanted, IntFunction<StorePath> into) throws IOException;
}
