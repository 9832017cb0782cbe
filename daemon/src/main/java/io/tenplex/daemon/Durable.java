package io.tenplex.daemon;

import io.tenplex.jobs.SelfWorker;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.durable.BlockRepair;
import io.tenplex.jobs.durable.DirectoryLock;
import io.tenplex.jobs.durable.DurableTier;
import io.tenplex.jobs.durable.SharedDurableDirs;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.tiers.ErasureRebuild;
import io.tenplex.jobs.tiers.ParityBlockRepair;
import io.tenplex.jobs.tiers.PartnerBlockRepair;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wires L4 when a checkpoint directory is configured: default retention, restore, then flushes. */
final class Durable {
    private static final Logger LOG = LoggerFactory.getLogger(Durable.class);
    /** How long a peer may take to send a partner copy of an entry whose durable block is damaged. */
    private static final Duration REPAIR_TIMEOUT = Duration.ofMinutes(2);

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
        if (dir.toString().contains(SharedDurableDirs.WORKER)) {
            throw new IllegalArgumentException("--checkpoint-dir " + dir + " names " + SharedDurableDirs.WORKER
                    + " but this daemon's worker number is not known");
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

    /**
     * Creates the checkpoint directory and takes its lock ({@link DirectoryLock}) for as long as the
     * daemon runs: a second daemon given a directory that a live one holds does not start (exit 2,
     * naming the lock file). Nothing when {@code dir} is null.
     */
    static void lock(Path dir, Lifecycle life) throws IOException {
        if (dir != null) {
            Files.createDirectories(dir);
            life.add("checkpoint directory lock", DirectoryLock.acquire(dir)); // the OS releases it if we die
        }
    }

    /** Where a damaged durable block is read from: a partner's copy (L2), else its rank rebuilt from parity (L3). */
    static BlockRepair repairs(TensorStore store, Generations generations, DaemonClient client, RangeReads reads,
            Supplier<Map<Integer, InetSocketAddress>> peers) {
        return BlockRepair.firstOf(new PartnerBlockRepair(client, peers, REPAIR_TIMEOUT), new ParityBlockRepair(store,
                new ErasureRebuild(store, generations, client, reads), peers));
    }

    /**
     * This daemon's own directory: {@code dir} with {@value SharedDurableDirs#WORKER} replaced by its
     * worker number (its entry in {@code --peers} at {@code bind:port}).
     */
    static Path own(Path dir, String bind, int port, Map<Integer, java.net.InetSocketAddress> peers) {
        if (dir == null || !dir.toString().contains(SharedDurableDirs.WORKER)) {
            return dir;
        }
        java.util.OptionalInt w = port > 0 ? SelfWorker.find(bind + ":" + port, peers) : java.util.OptionalInt.empty();
        if (w.isEmpty()) {
            throw new IllegalArgumentException("--checkpoint-dir " + dir + " names " + SharedDurableDirs.WORKER
                    + ", so this daemon must find itself in --peers: give --port (not 0) and a --peers entry at "
                    + "this host and port");
        }
        return Path.of(dir.toString().replace(SharedDurableDirs.WORKER, Integer.toString(w.getAsInt())));
    }
}
