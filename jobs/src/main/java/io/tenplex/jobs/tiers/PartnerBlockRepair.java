package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.durable.BlockRepair;
import io.tenplex.jobs.durable.DurableManifest;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Crc32c;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * L4 repaired from L2: a block of a durable generation that is damaged or missing on disk is read from
 * a partner's copy of its rank, {@code /job/<job>/replicas/<step>/<rank>/<path>} on another daemon of
 * the cluster (the daemon's {@code --peers}, in worker order; a daemon that does not answer, or has no
 * copy, or whose copy's block has another CRC32C, is passed over). The entry is read whole and kept
 * until a block of another entry is asked for, so an entry with several damaged blocks is read once.
 * Empty when no daemon has a good copy: the restore then falls back as without a repair.
 */
public final class PartnerBlockRepair implements BlockRepair {
    private static final Logger LOG = LoggerFactory.getLogger(PartnerBlockRepair.class);

    private final DaemonClient client;
    private final Supplier<Map<Integer, InetSocketAddress>> daemons;
    private final Duration timeout;
    private String cachedKey;
    private byte[] cached;

    /**
     * @param daemons the cluster's daemons by worker
     * @param timeout how long one daemon may take to answer
     */
    public PartnerBlockRepair(DaemonClient client, Supplier<Map<Integer, InetSocketAddress>> daemons,
            Duration timeout) {
        this.client = client;
        this.daemons = daemons;
        this.timeout = timeout;
    }

    @Override
    public synchronized Optional<ByteBuffer> repair(DurableManifest generation, int rank, String path, long offset,
            int length, int expected) {
        String job = generation.job();
        long step = generation.step();
        String key = job + "/" + step + "/" + rank + "/" + path;
        if (cached != null && key.equals(cachedKey)) {
            Optional<ByteBuffer> hit = block(cached, offset, length, expected);
            if (hit.isPresent()) {
                return hit;
            }
        }
        StorePath copy = new JobLayout(job).replica(step, rank).resolve(StorePath.parse(path));
        for (Map.Entry<Integer, InetSocketAddress> d : daemons.get().entrySet()) {
            byte[] bytes = read(d.getValue(), copy);
            Optional<ByteBuffer> got = bytes == null ? Optional.empty() : block(bytes, offset, length, expected);
            if (got.isPresent()) {
                cachedKey = key;
                cached = bytes;
                LOG.info("durable block of job={} step={} rank={} entry={} at {} read from the partner copy on "
                        + "worker {} ({})", job, step, rank, path, offset, d.getKey(), d.getValue());
                return got;
            }
        }
        LOG.warn("durable block of job={} step={} rank={} entry={} at {}: no daemon has a good copy", job, step, rank,
                path, offset);
        return Optional.empty();
    }

    /** The entry's bytes on {@code daemon}, or null when it has none or does not answer. */
    private byte[] read(InetSocketAddress daemon, StorePath copy) {
        try {
            return client.readValue(daemon, copy).get(timeout.toMillis(), TimeUnit.MILLISECONDS).bytes();
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug("no copy of {} on {}: {}", copy, daemon, e.toString());
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static Optional<ByteBuffer> block(byte[] bytes, long offset, int length, int expected) {
        if (offset < 0 || offset + length > bytes.length) {
            return Optional.empty();
        }
        ByteBuffer b = ByteBuffer.wrap(bytes, (int) offset, length).slice();
        return Crc32c.of(b.duplicate()) == expected ? Optional.of(b) : Optional.empty();
    }
}
