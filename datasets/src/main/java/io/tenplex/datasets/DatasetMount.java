package io.tenplex.datasets;

import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One dataset mount of a job on this daemon: the partition, the shard buffers of the ranks this
 * daemon serves, the read-only view over them ({@link MountView}) and the loading counters.
 */
final class DatasetMount {
    final String job;
    final DatasetIndex index;
    final DataPartition partition;
    final List<Integer> ranks;
    final Map<Integer, ShardBuffer[]> shards = new LinkedHashMap<>();
    /** The local samples' ids, ascending, and at the same index their {@link SampleTable} positions. */
    private final SampleTable table;
    final Map<String, ViewNode> nodes;
    final long mountedNanos = System.nanoTime();
    final AtomicLong fromLocal = new AtomicLong();
    final AtomicLong fromPeers = new AtomicLong();
    final AtomicLong fromSource = new AtomicLong();
    final AtomicLong loadedBytes = new AtomicLong();
    final AtomicLong waitedReads = new AtomicLong();
    final AtomicLong waitNanos = new AtomicLong();
    final AtomicLong longestWaitNanos = new AtomicLong();
    volatile long firstBatchNanos = -1;
    volatile long loadedNanos = -1;
    volatile String loadError = "";
    private final AtomicLong failedSamples = new AtomicLong();
    private volatile String failure = ""; // why the first sample given up was
    private volatile boolean failed; // loading ended with samples given up
    /** Completed when loading ends (loaded, failed or unmounted); the counters are final by then. */
    final CompletableFuture<Void> settled = new CompletableFuture<>();
    final long totalBytes;
    final int totalSamples;
    private final MountHeap.Reservation heap;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * Allocates every shard buffer; on failure (over budget) frees what it allocated and rethrows.
     *
     * @param heap the heap reserved for this mount, released by {@link #close()} (transferred)
     */
    DatasetMount(String job, DatasetIndex index, DataPartition partition, List<Integer> ranks, Allocator allocator,
            MountHeap.Reservation heap) {
        this.job = job;
        this.index = index;
        this.partition = partition;
        this.ranks = List.copyOf(ranks);
        this.heap = heap;
        if (new HashSet<>(ranks).size() != ranks.size()) {
            heap.close();
            throw new IllegalArgumentException("ranks " + ranks + " name a rank more than once");
        }
        try {
            allocateShards(allocator);
            this.table = SampleTable.of(ranks.stream().map(shards::get).toArray(ShardBuffer[][]::new),
                    ranks.stream().mapToInt(r -> partition.batches() == 0 ? 0 : partition.localBatch(r)).toArray(),
                    partition.params().samplesPerFile());
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        this.totalBytes = table.bytes();
        this.totalSamples = table.size();
        this.nodes = MountView.of(this);
    }

    private void allocateShards(Allocator allocator) {
        for (int r : ranks) {
            int[] all = partition.rankSamples(r);
            ShardBuffer[] files = new ShardBuffer[partition.shardFiles(r)];
            shards.put(r, files); // partial arrays are freed by close()
            for (int f = 0; f < files.length; f++) {
                int[] ids = partition.shardSamples(all, f);
                long[] lengths = new long[ids.length];
                for (int i = 0; i < ids.length; i++) {
                    lengths[i] = index.length(ids[i]);
                }
                files[f] = new ShardBuffer(ids, lengths, allocator);
            }
        }
    }

    /** The mount's parameters and shape. */
    MountInfo info() {
        MountParams p = partition.params();
        List<Integer> local = new ArrayList<>();
        for (int r = 0; r < p.dpSize(); r++) {
            local.add(partition.localBatch(r));
        }
        return new MountInfo(job, p.progress(), p.globalBatch(), p.dpSize(), p.seed(), p.shuffle(), p.samplesPerFile(),
                index.size(), partition.epoch(), partition.batches(), partition.dropped(), local, ranks);
    }

    /** The loading counters now. */
    LoadStatus load() {
        long loaded = fromLocal.get() + fromPeers.get() + fromSource.get();
        String state = failed ? "failed" : loadedNanos >= 0 ? "loaded" : "loading";
        String error = !loadError.isEmpty() ? loadError : failedSamples.get() > 0 ? failure : "";
        return new LoadStatus(state, loaded, totalSamples, loadedBytes.get(),
                totalBytes, fromLocal.get(), fromPeers.get(), fromSource.get(), millis(firstBatchNanos),
                millis(loadedNanos), waitedReads.get(), waitNanos.get() / 1e6, longestWaitNanos.get() / 1e6,
                error.isEmpty() ? null : error);
    }

    /** A sample was given up (its source cannot produce it): the load will end {@code failed}. */
    void fail(String why) {
        if (failedSamples.getAndIncrement() == 0) {
            failure = why;
        }
    }

    /** Loading ended, {@code nanos} after the mount: every sample loaded, or {@code failed} if some were given up. */
    void loaded(long nanos) {
        long n = failedSamples.get();
        if (n == 0) {
            loadedNanos = nanos;
            return;
        }
        loadError = failure + (n > 1 ? " (and " + (n - 1) + " more samples cannot be loaded)" : "");
        failed = true;
    }

    private static Double millis(long nanos) {
        return nanos < 0 ? null : nanos / 1e6;
    }

    void recordRead(long waitedNanos) {
        DatasetMetrics.READS.inc();
        if (waitedNanos > 0) {
            DatasetMetrics.WAITS.observe(waitedNanos / 1e9);
            waitedReads.incrementAndGet();
            waitNanos.addAndGet(waitedNanos);
            longestWaitNanos.accumulateAndGet(waitedNanos, Math::max);
        }
    }

    /** The sample if this mount holds it loaded, else false. */
    boolean copySample(int id, ByteBuffer dst) {
        SampleLoc loc = table.find(id);
        return loc != null && loc.buf().copySample(loc.i(), dst);
    }

    /** Where local sample {@code id} lies, or null if no local rank reads it. */
    SampleLoc find(int id) {
        return table.find(id);
    }

    /** True if this mount holds sample {@code id} loaded. */
    boolean holds(int id) {
        SampleLoc loc = table.find(id);
        return loc != null && loc.buf().isFilled(loc.i());
    }

    /** True if sample {@code id} is in the first global batch of the local ranks. */
    boolean inFirstBatch(int id) {
        return table.inFirstBatch(id);
    }

    /** The bytes of sample {@code id} if this mount holds it loaded, else null. */
    ByteBuffer loadedSample(int id) {
        if (id < 0 || id >= index.size()) {
            return null;
        }
        ByteBuffer tmp = ByteBuffer.allocate((int) index.length(id));
        return copySample(id, tmp) ? tmp.flip() : null;
    }

    /** Samples to load, as many as {@link #loadAt} takes. */
    int loadCount() {
        return totalSamples;
    }

    /**
     * The {@code k}-th sample in loading order: the first global batch of every local rank, then
     * the second, and so on.
     */
    SampleLoc loadAt(int k) {
        return table.loadAt(k);
    }

    /** Samples of the first global batch over the local ranks. */
    int firstBatchSamples() {
        int n = 0;
        for (int r : ranks) {
            n += partition.batches() == 0 ? 0 : partition.localBatch(r);
        }
        return n;
    }

    /** Frees the shard buffers and the heap reservation; idempotent. */
    void close() {
        settled.complete(null);
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (ShardBuffer[] files : shards.values()) {
            for (ShardBuffer b : files) {
                if (b != null) {
                    b.close();
                }
            }
        }
        heap.close();
    }
}
