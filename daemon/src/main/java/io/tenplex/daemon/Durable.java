package io.tenplex.daemon;

import io.tenplex.jobs.Generations;
import io.tenplex.jobs.Tiers;
import io.tenplex.jobs.durable.BlockRepair;
import io.tenplex.jobs.durable.DurableTier;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wires L4 when a checkpoint directory is configured: default retention, restore, then flushes. */
final class Durable {
    private static final Logger LOG = LoggerFactory.getLogger(Durable.class);

    private Durable() {
    }

    /**
     * Restores the durable generations in {@code dir} (a damaged block read from {@code repair}) and
     * subscribes the tier to completed generations; nothing when {@code dir} is null.
     */
    static DurableTier start(Path dir, TensorStore store, Generations generations, Executor work, BlockRepair repair)
            throws IOException {
        if (dir == null) {
            return null;
        }
        Files.createDirectories(dir);
        Tiers.Settings d = generations.tiers().defaults();
        generations.tiers().setDefaults(new Tiers.Settings(d.partners(), d.groupSize(), d.parity(),
                DurableTier.DEFAULT_KEEP));
        DurableTier tier = new DurableTier(dir, store, generations, work, repair);
        long start = System.nanoTime();
        Map<String, List<Long>> restored = tier.restore();
        LOG.info("durable tier in {}: restored {} ({} ms)", dir, restored.isEmpty() ? "nothing" : restored,
                (System.nanoTime() - start) / 1_000_000);
        generations.addListener(tier);
        return tier;
    }
}
