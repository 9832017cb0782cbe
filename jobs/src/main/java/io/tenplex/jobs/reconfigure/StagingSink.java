package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.SharedArena;
import io.tenplex.store.memory.SharedSegments;
import io.tenplex.transform.ShardSink;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Binds the executor's sink port to a daemon's store: new shards are assembled in shared-memory
 * segments ({@link SharedArena}: kept ones first, whose pages are already touched), where a load on
 * this host maps them with no further copy, or in private off-heap memory where the daemon has no
 * shared memory ({@link #slowMemory} says why), and published under the plan's staging path when
 * complete (with their block checksums); kept
 * shards are linked to the saved ones without copying, once their segment-backed bytes are checked against
 * the CRC32C of their commit; a shard with the bytes of another one of the part (a data-parallel
 * replica) is linked to it. {@link #abort()} frees unfinished shards.
 */
public final class StagingSink implements ShardSink {
    private final TensorStore store;
    private final JobLayout paths;
    private final String plan;
    private final Map<String, Open> open = new ConcurrentHashMap<>();
    private final SharedArena arena;
    private final SharedSegments segments;
    /** Bytes placed in private memory, and why the first of them were not placed in shared memory. */
    private long privateBytes;
    private String privateWhy;

    private record Open(Blob blob, TensorMeta meta) {}

    /** New shards in private memory only. */
    public StagingSink(TensorStore store, JobLayout paths, String plan) {
        this(store, paths, plan, null);
    }

    /** @param segments the daemon's shared memory, or null where it has none */
    public StagingSink(TensorStore store, JobLayout paths, String plan, SharedSegments segments) {
        this.store = store;
        this.paths = paths;
        this.plan = plan;
        this.segments = segments;
        this.arena = segments == null ? null : new SharedArena(segments, store.allocator());
        this.privateWhy = segments == null ? "the daemon has no shared memory" : null;
    }

    @Override
    public void expect(long[] sizes) {
        if (arena != null) {
            arena.expect(sizes);
        }
    }

    @Override
    public ByteBuffer open(int rank, String key, Shape shape, DType dtype) {
        return open(rank, key, shape, dtype, false);
    }

    @Override
    public ByteBuffer open(int rank, String key, Shape shape, DType dtype, boolean tiled) {
        TensorMeta meta = new TensorMeta(dtype, shape);
        Blob blob = shared(meta.byteSize(), tiled);
        if (blob == null) {
            blob = store.allocator().allocate(meta.byteSize());
            synchronized (this) {
                privateBytes += meta.byteSize();
            }
        }
        ByteBuffer buf = blob.singleChunk();
        if (buf == null) {
            blob.release();
            throw new IllegalArgumentException("shard " + key + " of " + meta.byteSize()
                    + " bytes is larger than one 1 GiB chunk; not supported by the executor yet");
        }
        if (open.putIfAbsent(rank + "/" + key, new Open(blob, meta)) != null) {
            // a plan naming one shard twice: replacing the first would leave its buffer neither completed nor freed
            blob.release();
            throw new IllegalArgumentException("shard " + key + " of rank " + rank + " is opened twice");
        }
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
        Open o = open.get(rank + "/" + key);
        BlockChecksums sums = BlockChecksums.compute(o.blob(), store.checksumBlock()); // a throw leaves it open: an abort frees it
        open.remove(rank + "/" + key);
        store.putTensor(paths.staged(plan, rank, key), o.meta(), o.blob(), sums, true); // the store's, also when it throws
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

    /**
     * A blob in shared memory (zeroed where a recycled segment's old bytes would show through padding), or
     * null when none can be had now: then the shard and those after it go to private memory.
     */
    private Blob shared(long size, boolean tiled) {
        if (arena == null || privateWhy != null || size > store.allocator().chunkSize()) {
            return null;
        }
        Blob b;
        try {
            b = arena.take(size);
        } catch (IOException | RuntimeException e) { // out of budget, no segment: private memory, said why
            synchronized (this) {
                privateWhy = "no shared memory for them now: " + e.getMessage();
            }
            return null;
        }
        if (arena.recycled() && !tiled) {
            b.zero();
        }
        return b;
    }

    /**
     * Why this part's new shards took slower memory than recycled shared memory, or null: memory new
     * to the daemon (first touched by the move), or private memory a load must copy again.
     */
    public synchronized String slowMemory() {
        List<String> why = new ArrayList<>();
        if (privateBytes > 0) {
            why.add(mb(privateBytes) + " into private memory, which a load copies again (" + privateWhy + ")");
        }
        if (arena != null && arena.freshBytes() > 0) {
            why.add(mb(arena.freshBytes()) + " into " + arena.freshSegments() + " new shared-memory segment"
                    + (arena.freshSegments() == 1 ? "" : "s") + ", touched for the first time (the daemon kept "
                    + mb(arena.recycledBytes() + segments.keptBytes()) + " for reuse, none of a fitting size)");
        }
        return why.isEmpty() ? null : String.join("; ", why);
    }

    private static String mb(long bytes) {
        return bytes < 1_000_000 ? String.format(java.util.Locale.ROOT, "%.1f kB", bytes / 1e3)
                : String.format(java.util.Locale.ROOT, "%.1f MB", bytes / 1e6);
    }

    /** The run is over: the arena's own references go (each segment stays while its shards do). */
    public void finish() {
        if (arena != null) {
            arena.close();
        }
    }

    /** Frees shards that were opened but never completed. */
    public void abort() {
        open.values().forEach(o -> o.blob().release());
        open.clear();
        finish();
    }
}
