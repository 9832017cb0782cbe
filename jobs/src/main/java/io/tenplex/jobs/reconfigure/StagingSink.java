package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.transform.ShardSink;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Binds the executor's sink port to a daemon's store: new shards are assembled in off-heap memory
 * and published under the plan's staging path when complete (with their block checksums); kept
 * shards are linked to the saved ones without copying, once their segment-backed bytes are checked against
 * the CRC32C of their commit; a shard with the bytes of another one of the part (a data-parallel
 * replica) is linked to it. {@link #abort()} frees unfinished shards.
 */
public final class StagingSink implements ShardSink {
    private final TensorStore store;
    private final JobLayout paths;
    private final String plan;
    private final Map<String, Open> open = new ConcurrentHashMap<>();

    private record Open(Blob blob, TensorMeta meta) {}

    public StagingSink(TensorStore store, JobLayout paths, String plan) {
        this.store = store;
        this.paths = paths;
        this.plan = plan;
    }

    @Override
    public ByteBuffer open(int rank, String key, Shape shape, DType dtype) {
        TensorMeta meta = new TensorMeta(dtype, shape);
        Blob blob = store.allocator().allocate(meta.byteSize());
        ByteBuffer buf = blob.singleChunk();
        if (buf == null) {
            blob.release();
            throw new IllegalArgumentException("shard " + key + " of " + meta.byteSize()
                    + " bytes is larger than one 1 GiB chunk; not supported by the executor yet");
        }
        open.put(rank + "/" + key, new Open(blob, meta));
        return buf;
    }

    @Override
    public void keep(int rank, String key, int sourceRank, String sourceKey) {
        try (DataRef saved = store.openTensor(paths.saved(sourceRank, sourceKey))) {
            // a kept shard is the saved one's memory: bytes changed in its segment after the commit are not kept as good
            saved.verifyShared(0, saved.meta().byteSize());
        }
        store.link(paths.saved(sourceRank, sourceKey), paths.staged(plan, rank, key), true);
    }

    @Override
    public void complete(int rank, String key) {
        Open o = open.remove(rank + "/" + key);
        store.putTensor(paths.staged(plan, rank, key), o.meta(), o.blob(),
                BlockChecksums.compute(o.blob(), store.checksumBlock()), true);
    }

    @Override
    public boolean aliases() {
        return true;
    }

    /** A data-parallel replica's shard: linked to the one assembled for another rank (the store counts it once). */
    @Override
    public void alias(int rank, String key, int fromRank, String fromKey) {
        store.link(paths.staged(plan, fromRank, fromKey), paths.staged(plan, rank, key), true);
    }

    /** Frees shards that were opened but never completed. */
    public void abort() {
        open.values().forEach(o -> o.blob().release());
        open.clear();
    }
}
