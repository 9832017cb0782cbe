package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.durable.BlockRepair;
import io.tenplex.jobs.durable.DurableManifest;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.DataRef;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * L4 repaired from L3: when a block of a durable generation is damaged or missing on disk, the ranks
 * this daemon's worker held in that generation are rebuilt from their erasure-coded group (the other
 * members' ranks and the parity blocks, on the daemons of the cluster that still hold that
 * generation) into this daemon's {@code replicas/<step>/}, every piece checked against the seals'
 * CRC32C, and the block is read from there. One rebuild per generation; the job's groups are the
 * ones recorded in the durable manifest.
 */
public final class ParityBlockRepair implements BlockRepair {
    private static final Logger LOG = LoggerFactory.getLogger(ParityBlockRepair.class);

    private final TensorStore store;
    private final ErasureRebuild rebuild;
    private final Supplier<Map<Integer, InetSocketAddress>> daemons;
    /** job/step to whether its rebuild succeeded. */
    private final Map<String, Boolean> tried = new HashMap<>();

    /** @param daemons the cluster's daemons by worker */
    public ParityBlockRepair(TensorStore store, ErasureRebuild rebuild,
            Supplier<Map<Integer, InetSocketAddress>> daemons) {
        this.store = store;
        this.rebuild = rebuild;
        this.daemons = daemons;
    }

    @Override
    public synchronized Optional<ByteBuffer> repair(DurableManifest g, int rank, String path, long offset, int length,
            int expected) {
        DurableManifest.Levels levels = g.levels();
        if (levels == null || levels.groupSize() == 0) {
            return Optional.empty();
        }
        String key = g.job() + "/" + g.step();
        if (!tried.computeIfAbsent(key, k -> rebuilt(g, rank))) {
            return Optional.empty();
        }
        StorePath copy = new JobLayout(g.job()).replica(g.step(), rank).resolve(StorePath.parse(path));
        try (DataRef ref = store.open(copy)) {
            if (offset < 0 || offset + length > ref.size()) {
                return Optional.empty();
            }
            ByteBuffer out = ByteBuffer.allocate(length);
            ref.copyTo(offset, length, out);
            out.flip();
            return Crc32c.of(out.duplicate()) == expected ? Optional.of(out) : Optional.empty();
        } catch (StoreException | IllegalArgumentException e) {
            LOG.warn("durable block of job={} step={} rank={} entry={} at {}: not in the rebuilt rank: {}", g.job(),
                    g.step(), rank, path, offset, e.getMessage());
            return Optional.empty();
        }
    }

    /** Rebuilds the ranks of the worker that held {@code rank} from parity; whether that worked. */
    private boolean rebuilt(DurableManifest g, int rank) {
        List<Integer> workers = Ring.rankWorkers(g.config(), g.world());
        if (rank >= workers.size()) {
            LOG.warn("job={} step={}: the manifest's configuration does not place rank {}; no rebuild from parity",
                    g.job(), g.step(), rank);
            return false;
        }
        int worker = workers.get(rank);
        DurableManifest.Levels l = g.levels();
        Map<Integer, InetSocketAddress> cluster = daemons.get();
        try {
            rebuild.rebuild(g.job(), g.step(), new Tiers.Settings(l.partners(), l.groupSize(), l.parity(), 0),
                    Ring.of(g.config(), g.world(), cluster.keySet()), worker, Set.of(worker), cluster);
            LOG.info("durable generation job={} step={}: worker {}'s ranks rebuilt from parity to repair it", g.job(),
                    g.step(), worker);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.warn("durable generation job={} step={}: no rebuild from parity: {}", g.job(), g.step(), e.toString());
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
