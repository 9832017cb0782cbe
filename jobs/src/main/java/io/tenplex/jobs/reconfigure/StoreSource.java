package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import io.tenplex.store.DataRef;
import io.tenplex.store.RegionRead;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ShardSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/**
 * Binds the executor's source port: pieces held by this daemon's worker are copied from the local
 * store in memory, everything else is read from the peer daemon of the holder's worker.
 */
public final class StoreSource implements ShardSource {
    private final TensorStore local;
    private final int worker;
    private final ShardPaths paths;
    private final ShardSource peers;

    public StoreSource(TensorStore local, int worker, JobLayout paths, ShardSource peers) {
        this(local, worker, paths::saved, peers);
    }

    /** @param paths where a rank's shard is (its saved tree, or the tree a rebuild streams into) */
    StoreSource(TensorStore local, int worker, ShardPaths paths, ShardSource peers) {
        this.local = local;
        this.worker = worker;
        this.paths = paths;
        this.peers = peers;
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException {
        return read(rank, device, key, region, dst, 0);
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
            throws IOException {
        if (device.worker() != worker) {
            return peers.read(rank, device, key, region, dst, pace);
        }
        try (DataRef ref = local.openTensor(paths.of(rank, key))) {
            RegionRead read = new RegionRead(ref, ref.meta(), region);
            if (read.byteSize() != dst.remaining()) {
                throw new IOException("local shard " + key + " of rank " + rank + " [" + region + "] has "
                        + read.byteSize() + " bytes, expected " + dst.remaining());
            }
            read.verifyShared(); // bytes a client changed in its segment after the commit are never moved as good
            read.copy(dst);
            return OptionalInt.empty(); // a memory copy needs no transfer checksum
        } catch (StoreException | IllegalArgumentException e) {
            throw new IOException("local shard " + key + " of rank " + rank + ": " + e.getMessage(), e);
        }
    }
}
