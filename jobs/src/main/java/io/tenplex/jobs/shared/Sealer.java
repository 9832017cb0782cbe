package io.tenplex.jobs.shared;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.generations.LoadChoice;
import io.tenplex.jobs.generations.SavesInFlight;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** What shared-memory saves and loads ask of the job lifecycle (the {@code Jobs} facade answers). */
public interface Sealer {
    /**
     * Enters a save of {@code job} in flight ({@code what} names it): a removal of the job waits for it
     * to leave, and it waits for a removal that runs now.
     */
    SavesInFlight.Pass enterSave(String job, String what);

    /**
     * Seals the rank's tree at {@code saved} as {@code step} here, then tells every daemon of the
     * cluster; the caller holds a pass ({@link #enterSave}) for the job.
     */
    CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, StorePath saved) throws IOException;

    /** What {@code rank} of {@code job} loads here. */
    LoadChoice loadChoice(String job, int rank);
}
