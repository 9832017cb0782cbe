package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import io.tenplex.transform.CorruptTransferException;
import io.tenplex.transform.ShardSource;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads pieces from the daemon of the holder's worker with range reads ({@link RangeReads}), paced
 * when asked. Every read asks for the holder's checksum; an answer without one is a
 * {@link CorruptTransferException}.
 */
public final class PeerSource implements ShardSource {
    private final RangeReads reads;
    private final Map<Integer, InetSocketAddress> daemons;
    private final ShardPaths paths;
    private final Duration timeout;

    /** @param daemons the daemon address of every worker */
    public PeerSource(RangeReads reads, Map<Integer, InetSocketAddress> daemons, JobLayout paths, Duration timeout) {
        this(reads, daemons, paths::saved, timeout);
    }

    /** @param paths where a rank's shard is on its holder (its saved tree, or the tree a rebuild streams into) */
    PeerSource(RangeReads reads, Map<Integer, InetSocketAddress> daemons, ShardPaths paths, Duration timeout) {
        this.reads = reads;
        this.daemons = Map.copyOf(daemons);
        this.paths = paths;
        this.timeout = timeout;
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException {
        return read(rank, device, key, region, dst, 0);
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
            throws IOException {
        InetSocketAddress addr = daemons.get(device.worker());
        if (addr == null) {
            throw new IOException("no daemon address for worker " + device.worker());
        }
        try {
            OptionalInt crc = reads.readRegion(addr, paths.of(rank, key), region, dst, pace)
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (crc.isEmpty()) { // asked for and missing: as untrustworthy as a mismatch
                throw new CorruptTransferException(addr + " sent " + key + " of rank " + rank + " without a checksum");
            }
            return crc;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof CorruptTransferException missing) {
                throw new CorruptTransferException(key + " of rank " + rank + ": " + missing.getMessage());
            }
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (TimeoutException e) {
            throw new IOException("no answer from " + addr + " within " + timeout.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
