package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.zip.CRC32C;

/**
 * Rebuilds a lost worker's rank trees of a generation from its erasure-coded group ({@link ErasureParity}):
 * the surviving parity blocks minus the other members' blocks (read from their daemons' generations),
 * solved for the lost members (as many as parity blocks survive). The result lands in this daemon's
 * replica tree, every piece checked against the seal's CRC32C before it is published.
 */
public final class ErasureRebuild {
    private static final Duration TIMEOUT = Duration.ofMinutes(10);
    private final TensorStore store;
    private final Generations generations;
    private final DaemonClient client;
    private final RangeReads reads;
    private final SegmentReads io;
    private final ObjectMapper json = new ObjectMapper();
    /**
     * The rebuilds under way, by job, step, group and lost members: a recovery asking again while one
     * runs (the change that started it was aborted and is retried) shares it rather than starting a
     * second writer of the same trees, and its fallback when the first asker had none (a dry plan).
     */
    private final Map<String, Running> inFlight = new java.util.concurrent.ConcurrentHashMap<>();

    private record Running(Pending p, java.util.concurrent.atomic.AtomicReference<RebuildFallback> fallback) {
    }

    public ErasureRebuild(TensorStore store, Generations generations, DaemonClient client, RangeReads reads) {
        this.store = store;
        this.generations = generations;
        this.client = client;
        this.reads = reads;
        this.io = new SegmentReads(client, reads, TIMEOUT, 0);
    }

    /**
     * Rebuilds every rank of worker {@code lost}, and of the other lost members of its group, of
     * generation {@code step} into this daemon's {@code replicas/<step>/}.
     *
     * @return the workers rebuilt (empty when the job keeps no parity)
     * @throws IOException when fewer parity blocks of the group survive than it lost members
     */
    public Set<Integer> rebuild(String job, long step, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons) throws IOException, InterruptedException {
        return join(start(job, step, lost, lostWorkers, daemons, Runnable::run, RebuildFallback.NONE));
    }

    /** The level a rank being rebuilt was published from: solved from its group's parity (L3). */
    public static final String PARITY = "rebuilt from parity";
    /** The level a rank being rebuilt was published from: its lost worker's durable copy (L4). */
    public static final String DURABLE = "durable copy read";

    /**
     * A rebuild under way: the lost workers it rebuilds, the seal manifest of each of their ranks, and
     * per rank a future completed with the level it came from ({@link #PARITY}, or {@link #DURABLE}
     * when solving failed and the {@link RebuildFallback} read it) once that rank is published in the replica
     * tree; exceptionally, with the reason, when no level could serve it. Nothing of a rank is
     * published unless all of it matched its seal's CRC32C.
     */
    public record Pending(Set<Integer> workers, Map<Integer, SealManifest> manifests,
            Map<Integer, CompletableFuture<String>> ranks) {
        public static final Pending NONE = new Pending(Set.of(), Map.of(), Map.of());
    }

    /**
     * As {@link #rebuild(String, long, int, Set, Map)}, checking here that enough parity survives and
     * solving on {@code async}: the answer comes before the ranks are rebuilt. A replica manifest
     * left from before of a rank it rebuilds is removed first, so a published manifest always means
     * this rebuild's complete tree. When solving fails at any point after this answers (reading a
     * block, the decode, a CRC32C mismatch while publishing), the ranks not published yet are read
     * through {@code fallback} instead, checked against their seal manifests, then published.
     *
     * @throws IOException when fewer parity blocks of the group survive than it lost members
     */
    public Pending start(String job, long step, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons, java.util.concurrent.Executor async, RebuildFallback fallback)
            throws IOException, InterruptedException {
        Tiers.Settings s = generations.tiers().settings(job);
        if (s.groupSize() == 0) {
            return Pending.NONE;
        }
        return start(job, step, s, Ring.of(generations.config(job, step), generations.world(job, step),
                daemons.keySet()), lost, lostWorkers, daemons, async, fallback);
    }

    /** {@link #rebuild(String, long, int, Set, Map)} of a generation this daemon may not know (a restore's). */
    Set<Integer> rebuild(String job, long step, Tiers.Settings s, Ring ring, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons) throws IOException, InterruptedException {
        return join(start(job, step, s, ring, lost, lostWorkers, daemons, Runnable::run, RebuildFallback.NONE));
    }

    /** The workers rebuilt, once every rank is published; the first failure otherwise. */
    private static Set<Integer> join(Pending p) throws IOException, InterruptedException {
        for (CompletableFuture<String> f : p.ranks().values()) {
            try {
                f.get();
            } catch (ExecutionException e) {
                throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
            }
        }
        return p.workers();
    }

    private Pending start(String job, long step, Tiers.Settings s, Ring ring, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons, java.util.concurrent.Executor async, RebuildFallback fallback)
            throws IOException, InterruptedException {
        JobLayout paths = new JobLayout(job);
        List<List<Integer>> groups = ring.groups(s.groupSize());
        int g = 0;
        while (g < groups.size() && !groups.get(g).contains(lost)) {
            g++;
        }
        if (g == groups.size()) {
            throw new IOException("worker " + lost + " is in no group of generation " + step);
        }
        List<Integer> group = groups.get(g);
        List<Integer> gone = group.stream().filter(lostWorkers::contains).toList();
        List<Integer> holders = ring.parityHolders(group, s.parity());
        List<Integer> js = new ArrayList<>();
        byte[] members = null;
        for (int j = 0; j < holders.size() && js.size() < gone.size(); j++) {
            InetSocketAddress h = daemons.get(holders.get(j));
            if (lostWorkers.contains(holders.get(j)) || h == null) {
                continue;
            }
            try {
                members = io.await(client.readValue(h, paths.parity(step, g).child("members.json")), paths.parity(step, g))
                        .bytes();
                js.add(j);
            } catch (IOException absent) {
                // this holder has no complete parity of the group
            }
        }
        if (js.size() < gone.size()) {
            throw new IOException("group " + group + " of generation " + step + " lost " + gone + " but only "
                    + js.size() + " of its parity blocks survive");
        }
        Decode d = new Decode(paths, step, g, GroupManifests.parse(members), gone, daemons);
        return launch(job + " " + step + " " + g + " " + gone, d, js,
                js.stream().map(j -> daemons.get(holders.get(j))).toList(), async, fallback);
    }

    /** Starts solving on {@code async}, or answers the rebuild of the same ranks already under way. */
    private Pending launch(String key, Decode d, List<Integer> js, List<InetSocketAddress> parityDaemons,
            java.util.concurrent.Executor async, RebuildFallback fallback) throws IOException {
        Running r;
        synchronized (inFlight) {
            Running running = inFlight.get(key);
            if (running != null) { // one rebuild at a time writes these ranks' trees: share it
                running.fallback().compareAndSet(RebuildFallback.NONE, fallback);
                return running.p();
            }
            r = new Running(d.pending(), new java.util.concurrent.atomic.AtomicReference<>(fallback));
            inFlight.put(key, r);
        }
        Pending p = r.p();
        try {
            async.execute(() -> {
                try {
                    solve(d, js, parityDaemons, p, r.fallback()::get);
                } finally {
                    inFlight.remove(key, r);
                }
            });
        } catch (RejectedExecutionException e) {
            inFlight.remove(key, r);
            fail(p, e);
            throw new IOException("no thread to rebuild " + key + " on", e);
        }
        return p;
    }

    /**
     * Solves and publishes; when that fails, the ranks not published yet are read through
     * the fallback then (not when interrupted: the daemon is stopping); a rank no level serves fails
     * with both reasons. Every rank's future is completed, whatever is thrown.
     */
    private void solve(Decode d, List<Integer> js, List<InetSocketAddress> parityDaemons, Pending p,
            java.util.function.Supplier<RebuildFallback> fallback) {
        try {
            long t0 = System.nanoTime();
            d.run(js, parityDaemons, p.ranks());
            org.slf4j.LoggerFactory.getLogger(ErasureRebuild.class).info("generation {}: ranks {} rebuilt from parity in "
                    + "{} ms (blocks read in {} ms)", d.step, p.ranks().keySet(), (System.nanoTime() - t0) / 1_000_000,
                    (d.readAt - t0) / 1_000_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail(p, new IOException("interrupted while rebuilding from parity", e));
        } catch (IOException | RuntimeException | OutOfMemoryError e) { // OOM: a block's heap buffer, released here
            try {
                new ParityFallback(store, d.paths, d.step, fallback.get()).serve(p, d.ranksByWorker(), e);
            } catch (RuntimeException x) {
                x.addSuppressed(e);
                fail(p, x);
            }
        } finally {
            fail(p, new IOException("the rebuild from parity ended without publishing this rank"));
        }
    }

    /** Fails every rank of {@code p} not completed yet. */
    private static void fail(Pending p, Throwable why) {
        p.ranks().values().forEach(f -> f.completeExceptionally(why));
    }

    /** Solving a group for its lost members' blocks from surviving parity blocks and members. */
    private final class Decode {
        final JobLayout paths;
        final long step;
        /** When every block the decode needs was read (System.nanoTime). */
        volatile long readAt;
        private final int g;
        private final GroupManifests manifests;
        private final List<Integer> gone;
        private final Map<Integer, InetSocketAddress> daemons;

        Decode(JobLayout paths, long step, int g, GroupManifests manifests, List<Integer> gone,
                Map<Integer, InetSocketAddress> daemons) {
            this.paths = paths;
            this.step = step;
            this.g = g;
            this.manifests = manifests;
            this.gone = gone;
            this.daemons = daemons;
        }

        /** Per lost worker rebuilt, its ranks. */
        Map<Integer, List<Integer>> ranksByWorker() {
            Map<Integer, List<Integer>> out = new TreeMap<>();
            for (int w : gone) {
                out.put(w, manifests.byWorker().get(w).stream().map(SealManifest::rank).toList());
            }
            return out;
        }

        /** The rebuild's ranks, any replica manifest of them left from before removed. */
        Pending pending() {
            Map<Integer, SealManifest> ms = new TreeMap<>();
            Map<Integer, CompletableFuture<String>> ranks = new TreeMap<>();
            for (int w : gone) {
                for (SealManifest m : manifests.byWorker().get(w)) {
                    deleteIfThere(paths.replicaManifest(step, m.rank()));
                    ms.put(m.rank(), m);
                    ranks.put(m.rank(), new CompletableFuture<>());
                }
            }
            return new Pending(Set.copyOf(gone), Map.copyOf(ms), java.util.Collections.unmodifiableMap(ranks));
        }

        /**
         * {@code js}: the parity blocks used (as many as lost members), {@code holders}: their daemons;
         * completes each rank's future once it is published.
         */
        void run(List<Integer> js, List<InetSocketAddress> holders, Map<Integer, CompletableFuture<String>> published)
                throws IOException, InterruptedException {
            List<Integer> members = manifests.members();
            int k = members.size();
            long length = Math.max(1, manifests.length());
            if (length > Integer.MAX_VALUE) {
                throw new IOException("a block of " + length + " bytes is over 2 GiB");
            }
            List<ByteBuffer> free = new ArrayList<>();
            List<ByteBuffer> syndromes = syndromes(js, holders, (int) length, free);
            readAt = System.nanoTime();
            int[][] a = new int[gone.size()][gone.size()];
            for (int t = 0; t < js.size(); t++) {
                for (int u = 0; u < gone.size(); u++) {
                    a[t][u] = Gf256.cauchy(js.get(t), members.indexOf(gone.get(u)), k);
                }
            }
            int[][] inv = Gf256.invert(a);
            for (int u = 0; u < gone.size(); u++) {
                ByteBuffer block = free.get(u).clear();
                java.util.Arrays.fill(block.array(), (byte) 0);
                for (int t = 0; t < js.size(); t++) {
                    Gf256.mulAdd(block.duplicate().clear(), syndromes.get(t).duplicate().clear(), inv[u][t]);
                }
                List<BlockLayout.Segment> all = manifests.layout(gone.get(u)).segments();
                for (SealManifest m : manifests.byWorker().get(gone.get(u))) {
                    publish(paths, step, m, all.stream().filter(x -> x.rank() == m.rank()).toList(), block);
                    published.get(m.rank()).complete(PARITY);
                }
            }
        }

        /**
         * The parity blocks {@code js} plus the surviving members' terms (the syndromes). The parity
         * blocks arrive while the members' blocks are read (other senders into one receiving link); the
         * members' terms are summed into buffers of their own, added last and then left in {@code free}.
         */
        private List<ByteBuffer> syndromes(List<Integer> js, List<InetSocketAddress> holders, int length,
                List<ByteBuffer> free) throws IOException, InterruptedException {
            List<Integer> members = manifests.members();
            List<ByteBuffer> syndromes = new ArrayList<>();
            List<CompletableFuture<OptionalInt>> parityReads = new ArrayList<>();
            for (int t = 0; t < js.size(); t++) {
                syndromes.add(ByteBuffer.allocate(length));
                parityReads.add(reads.readRegion(holders.get(t), parity(js.get(t)), Region.whole(Shape.of(length)),
                        syndromes.get(t).duplicate(), 0));
                free.add(ByteBuffer.allocate(length));
            }
            for (int i = 0; i < members.size(); i++) {
                if (gone.contains(members.get(i))) {
                    continue;
                }
                for (BlockLayout.Segment s : manifests.layout(members.get(i)).segments()) {
                    ByteBuffer bytes = io.read(daemons.get(members.get(i)), paths, step, s);
                    for (int t = 0; t < js.size(); t++) {
                        Gf256.mulAdd(free.get(t).duplicate().position((int) s.offset()), bytes,
                                Gf256.cauchy(js.get(t), i, members.size()));
                    }
                }
            }
            for (int t = 0; t < js.size(); t++) {
                if (io.await(parityReads.get(t), parity(js.get(t))).isEmpty()) {
                    throw new IOException(parity(js.get(t)) + " arrived without a checksum");
                }
                Gf256.mulAdd(syndromes.get(t), free.get(t).duplicate().clear(), 1);
            }
            return syndromes;
        }

        private StorePath parity(int j) {
            return paths.parity(step, g).child(Integer.toString(j));
        }
    }

    /** Writes one rebuilt rank into the replica tree (checked piece by piece), its manifest last. */
    private void publish(JobLayout paths, long step, SealManifest m, List<BlockLayout.Segment> segments,
            ByteBuffer block) throws IOException {
        StorePath incoming = paths.replicas(step).child(m.rank() + ".incoming");
        deleteIfThere(incoming);
        store.mkdirs(incoming);
        for (BlockLayout.Segment s : segments) {
            ByteBuffer bytes = block.duplicate().position((int) s.offset()).limit((int) (s.offset() + s.item().size()))
                    .slice();
            CRC32C c = new CRC32C();
            c.update(bytes.duplicate());
            StorePath to = StorePath.parse(incoming + "/" + s.path());
            SegmentReads.check(to, Crc32c.hex((int) c.getValue()), s.item().crc32c());
            if (s.tensor()) {
                Shape shape = Shape.of(s.item().shape().stream().mapToLong(Long::longValue).toArray());
                Blob blob = store.allocator().allocate(s.item().size());
                blob.write(0, bytes);
                store.putTensor(to, new TensorMeta(DType.fromName(s.item().dtype()), shape), blob,
                        BlockChecksums.compute(blob, store.checksumBlock()), true);
            } else {
                byte[] b = new byte[bytes.remaining()];
                bytes.get(b);
                SmallFiles.put(store, to, b);
            }
        }
        deleteIfThere(paths.replica(step, m.rank()));
        store.move(incoming, paths.replica(step, m.rank()));
        store.mkdirs(paths.replicas(step).child("manifests"));
        SmallFiles.put(store, paths.replicaManifest(step, m.rank()), json.writeValueAsBytes(m));
    }

    private void deleteIfThere(StorePath p) {
        try {
            store.delete(p);
        } catch (StoreException e) {
            // not there
        }
    }
}
