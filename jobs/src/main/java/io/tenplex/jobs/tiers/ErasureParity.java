package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * L3, erasure-coded groups: when a generation of a job with {@code groupSize = k}, {@code parity = m}
 * completes, the job's ring is cut into groups of {@code k} workers ({@link Ring#groups}); the
 * {@code j}-th worker after a group keeps its parity block {@code j} ({@link Gf256}, Cauchy
 * Reed-Solomon over the members' blocks, {@link BlockLayout}) under {@code /job/<job>/parity/<step>/<g>/}.
 * Each daemon also snapshots its own rank trees into its replica tree, as L2 does. Dropped with the generation.
 */
public final class ErasureParity extends TierListener {
    private static final Logger LOG = LoggerFactory.getLogger(ErasureParity.class);
    private static final Duration TIMEOUT = Duration.ofMinutes(10);

    private final Map<String, CompletableFuture<Long>> encoded = new ConcurrentHashMap<>();

    public ErasureParity(TensorStore store, Generations generations, DaemonClient client, RangeReads reads,
            Executor background, Supplier<Map<Integer, InetSocketAddress>> daemons, Supplier<OptionalInt> self,
            LongSupplier pace) {
        super(store, generations, client, reads, background, daemons, self, pace);
    }

    @Override
    public void completed(String job, long step) {
        Tiers.Settings s = generations.tiers().settings(job);
        if (s.groupSize() == 0) {
            return;
        }
        CompletableFuture<Long> done = encoded(job, step);
        inBackground(LOG, "parity", job, step, done, () -> encode(job, step, s.groupSize(), s.parity()));
    }

    @Override
    public void dropped(String job, long step) {
        encoded.remove(job + "@" + step);
        background.execute(() -> {
            try {
                store.delete(new JobLayout(job).parities(step));
            } catch (StoreException e) {
                // no parity here
            }
        });
    }

    /** Completes with the parity bytes this daemon keeps of a generation once they are in place. */
    public CompletableFuture<Long> encoded(String job, long step) {
        return encoded.computeIfAbsent(job + "@" + step, k -> new CompletableFuture<>());
    }

    private long encode(String job, long step, int k, int m) throws IOException, InterruptedException {
        JobLayout paths = new JobLayout(job);
        int me = self.get().orElseThrow(() -> new IOException("this daemon is not among --peers: no worker number"));
        Map<Integer, InetSocketAddress> cluster = daemons.get();
        Ring ring = Ring.of(generations.config(job, step), generations.world(job, step), cluster.keySet());
        if (!ring.workers().contains(me)) {
            return 0;
        }
        OwnReplicas.keep(store, paths, step);
        List<List<Integer>> groups = ring.groups(k);
        long bytes = 0;
        for (int g = 0; g < groups.size(); g++) {
            List<Integer> holders = ring.parityHolders(groups.get(g), m);
            if (holders.isEmpty()) {
                LOG.warn("job={} step={} group {} of {} workers: the ring is too small to keep {} parity blocks "
                        + "outside it", job, step, groups.get(g), groups.get(g).size(), m);
            }
            int j = holders.indexOf(me);
            if (j >= 0) {
                bytes += encodeGroup(paths, step, g, groups.get(g), j, cluster);
            }
        }
        if (store.stat(paths.generation(step)).isPresent()) {
            generations.tiers().reached(job, step, Tiers.ERASURE);
        }
        return bytes;
    }

    /** Computes parity block {@code j} of group {@code g} and stores it with the members' manifests. */
    private long encodeGroup(JobLayout paths, long step, int g, List<Integer> members, int j,
            Map<Integer, InetSocketAddress> cluster) throws IOException, InterruptedException {
        SegmentReads fetch = new SegmentReads(client, reads, TIMEOUT, pace.getAsLong());
        GroupManifests manifests = GroupManifests.ask(members, cluster, paths, step, fetch, client);
        long length = manifests.length();
        Blob parity = store.allocator().allocate(Math.max(1, length));
        boolean handedOver = false;
        try {
            ByteBuffer p = parity.singleChunk();
            if (p == null) {
                throw new IOException("a block of " + length + " bytes is over one chunk: not erasure-coded");
            }
            for (int i = 0; i < members.size(); i++) {
                int c = Gf256.cauchy(j, i, members.size());
                for (BlockLayout.Segment s : manifests.layout(members.get(i)).segments()) {
                    ByteBuffer bytes = fetch.read(cluster.get(members.get(i)), paths, step, s);
                    Gf256.mulAdd(p.duplicate().position((int) s.offset()), bytes, c);
                }
            }
            handedOver = true;
            store.putTensor(paths.parity(step, g).child(Integer.toString(j)), new TensorMeta(DType.fromName("u8"),
                    Shape.of(Math.max(1, length))), parity, BlockChecksums.compute(parity, store.checksumBlock()), true);
        } finally {
            if (!handedOver) {
                parity.release();
            }
        }
        SmallFiles.put(store, paths.parity(step, g).child("members.json"), manifests.json()); // last: complete
        LOG.info("job={} step={} parity {} of group {} {} in place: bytes={}", paths.job(), step, j, g, members, length);
        return length;
    }
}
