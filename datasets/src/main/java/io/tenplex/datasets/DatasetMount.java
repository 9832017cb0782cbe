package io.tenplex.datasets;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.Npy;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One dataset mount of a job on this daemon: the partition, the shard buffers of the ranks this
 * daemon serves, and the read-only view over them in two layouts (paths relative to
 * {@code /job/<job>/}):
 *
 * <ul>
 *   <li>the prototype's: {@code head.txt}, {@code progress-<P>-cluster-of-<N>.txt} and
 *       {@code progress/<P>/cluster-of-<N>/rank-<RRR>/} with {@code list.txt},
 *       {@code batch-sizes.txt} and shard files {@code <NNNN>.tf_record} with {@code .idx} and
 *       {@code .meta};
 *   <li>the simple one: {@code dataset/mount.json} and {@code dataset/rank-<r>/} with
 *       {@code samples} (the rank's sample bytes in read order), {@code offsets.npy} (int64, count+1
 *       byte offsets into {@code samples}) and {@code ids.npy} (int64 global sample ids).
 * </ul>
 */
final class DatasetMount {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    /** Where a sample's bytes are in this mount. */
    record Loc(ShardBuffer buf, int i) {}

    final String job;
    final DatasetIndex index;
    final DataPartition partition;
    final List<Integer> ranks;
    final Map<Integer, ShardBuffer[]> shards = new LinkedHashMap<>();
    /** The local samples' ids, ascending, and at the same index their {@link SampleTable} positions. */
    private final SampleTable table;
    final Map<String, ViewNode> nodes = new HashMap<>();
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
    /** Completed when loading ends (loaded, failed or unmounted); the counters are final by then. */
    final java.util.concurrent.CompletableFuture<Void> settled = new java.util.concurrent.CompletableFuture<>();
    final long totalBytes;
    final int totalSamples;
    private final MountHeap.Reservation heap;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

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
        if (new java.util.HashSet<>(ranks).size() != ranks.size()) {
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
        buildView();
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

    private String progressDir() {
        MountParams p = partition.params();
        return "progress/" + p.progress() + "/cluster-of-" + p.dpSize();
    }

    private void buildView() {
        MountParams p = partition.params();
        String root = "/job/" + job + "/";
        String progressFile = "progress-" + p.progress() + "-cluster-of-" + p.dpSize() + ".txt";
        nodes.put("", ViewNode.dir());
        put("head.txt", text(root + progressFile + "\n"));
        StringBuilder rankDirs = new StringBuilder();
        for (int r = 0; r < p.dpSize(); r++) {
            rankDirs.append(root).append(progressDir()).append('/').append(rankName(r)).append('\n');
        }
        put(progressFile, text(rankDirs.toString()));
        mkdirs(progressDir());
        mkdirs("dataset");
        try {
            put("dataset/mount.json", ViewNode.file(JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(describeMount())));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e); // numbers, strings and lists only
        }
        for (int r : ranks) {
            String dir = progressDir() + "/" + rankName(r);
            mkdirs(dir);
            ShardBuffer[] files = shards.get(r);
            StringBuilder list = new StringBuilder();
            for (int f = 0; f < files.length; f++) {
                list.append(root).append(dir).append('/').append(shardName(f)).append('\n');
            }
            put(dir + "/list.txt", text(list.toString()));
            int local = partition.localBatch(r);
            put(dir + "/batch-sizes.txt", text(partition.batches() == 0 ? "" : local + " " + partition.batches() + "\n"));
            for (int f = 0; f < files.length; f++) {
                ShardBuffer b = files[f];
                put(dir + "/" + shardName(f), ViewNode.data(this, b));
                StringBuilder idx = new StringBuilder("1\n./" + shardName(f) + " " + b.ids.length + "\n");
                StringBuilder meta = new StringBuilder();
                for (int i = 0; i < b.ids.length; i++) {
                    idx.append(b.offsets[i]).append(' ').append(b.offsets[i + 1]).append('\n');
                    meta.append(b.ids[i]).append('\n');
                }
                put(dir + "/" + shardName(f) + ".idx", text(idx.toString()));
                put(dir + "/" + shardName(f) + ".meta", text(meta.toString()));
            }
            String simple = "dataset/rank-" + r;
            mkdirs(simple);
            put(simple + "/samples", ViewNode.data(this, files));
            int n = 0;
            for (ShardBuffer b : files) {
                n += b.ids.length;
            }
            ByteBuffer offsets = npy(n + 1).putLong(0);
            ByteBuffer ids = npy(n);
            long end = 0;
            for (ShardBuffer b : files) {
                for (int i = 0; i < b.ids.length; i++) {
                    ids.putLong(b.ids[i]);
                    offsets.putLong(end += b.length(i));
                }
            }
            put(simple + "/offsets.npy", ViewNode.file(offsets.array()));
            put(simple + "/ids.npy", ViewNode.file(ids.array()));
        }
    }

    static String rankName(int r) {
        return String.format(Locale.ROOT, "rank-%03d", r);
    }

    static String shardName(int f) {
        return String.format(Locale.ROOT, "%04d.tf_record", f);
    }

    /** The mount's parameters and shape, as {@code mount.json} and the status show them. */
    Map<String, Object> describeMount() {
        MountParams p = partition.params();
        List<Integer> local = new ArrayList<>();
        for (int r = 0; r < p.dpSize(); r++) {
            local.add(partition.localBatch(r));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("job", job);
        m.put("progress", p.progress());
        m.put("globalBatch", p.globalBatch());
        m.put("dpSize", p.dpSize());
        m.put("seed", p.seed());
        m.put("shuffle", p.shuffle());
        m.put("samplesPerFile", p.samplesPerFile());
        m.put("samples", index.size());
        m.put("epoch", partition.epoch());
        m.put("batches", partition.batches());
        m.put("dropped", partition.dropped());
        m.put("localBatch", local);
        m.put("ranks", ranks);
        return m;
    }

    private void mkdirs(String path) {
        String parent = "";
        for (String part : path.split("/")) {
            String child = parent.isEmpty() ? part : parent + "/" + part;
            if (!nodes.containsKey(child)) {
                nodes.put(child, ViewNode.dir());
                nodes.get(parent).add(part);
            }
            parent = child;
        }
    }

    private void put(String path, ViewNode node) {
        int slash = path.lastIndexOf('/');
        String parent = slash < 0 ? "" : path.substring(0, slash);
        mkdirs(parent.isEmpty() ? "" : parent);
        nodes.get(parent).add(path.substring(slash + 1));
        nodes.put(path, node);
    }

    private static ViewNode text(String s) {
        return ViewNode.file(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A 1-D int64 {@code .npy} of {@code count} values, its header written; the values go after it. */
    private static ByteBuffer npy(int count) {
        byte[] header = Npy.header(TensorMeta.of(DType.I64, count));
        return ByteBuffer.allocate(header.length + 8 * count).order(ByteOrder.LITTLE_ENDIAN).put(header);
    }

    void recordRead(long waitedNanos) {
        if (waitedNanos > 0) {
            waitedReads.incrementAndGet();
            waitNanos.addAndGet(waitedNanos);
            longestWaitNanos.accumulateAndGet(waitedNanos, Math::max);
        }
    }

    /** The sample if this mount holds it loaded, else false. */
    boolean copySample(int id, ByteBuffer dst) {
        Loc loc = table.find(id);
        return loc != null && loc.buf().copySample(loc.i(), dst);
    }

    /** Samples to load, as many as {@link #loadAt} takes. */
    int loadCount() {
        return totalSamples;
    }

    /**
     * The {@code k}-th sample in loading order: the first global batch of every local rank, then
     * the second, and so on.
     */
    Loc loadAt(int k) {
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
