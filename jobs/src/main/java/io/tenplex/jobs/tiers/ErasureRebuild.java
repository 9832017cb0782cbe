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
    private final RangeSolve solver;
    private final ObjectMapper json = new ObjectMapper();
    /**
     * The rebuilds under way, by job, step, group and lost members: a recovery asking again while one
     * runs (the change that started it was aborted and is retried) shares it rather than starting a
     * second writer of the same trees, and its fallback when the first asker had none (a dry plan).
     */
    private final Map<String, Running> inFlight = new java.util.concurrent.ConcurrentHashMap<>();

    private record Running(Pending p, java.util.concurrent.atomic.AtomicReference<RebuildFallback> fallback,
            java.util.concurrent.atomic.AtomicInteger holders) {
    }

    public ErasureRebuild(TensorStore store, Generations generations, DaemonClient client, RangeReads reads) {
        this.store = store;
        this.generations = generations;
        this.client = client;
        this.reads = reads;
        this.io = new SegmentReads(client, reads, TIMEOUT, 0);
        this.solver = new RangeSolve(reads, io, TIMEOUT);
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
        return join(start(job, step, lost, lostWorkers, daemons, Runnable::run, RebuildFallback.NONE, false));
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
            Map<Integer, CompletableFuture<String>> ranks, Runnable release) {
        public static final Pending NONE = new Pending(Set.of(), Map.of(), Map.of(), () -> { });

        /**
         * Says this asker reads nothing more of the ranks (its change committed or aborted): once no
         * asker of a streamed rebuild is left, the trees it streamed into are removed (when it ends, if
         * it still runs). Idempotent.
         */
        @Override
        public Runnable release() {
            return release;
        }

        Pending withRelease(Runnable r) {
            return new Pending(workers, manifests, ranks, r);
        }
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
        return start(job, step, lost, lostWorkers, daemons, async, fallback, false);
    }

    /**
     * As {@link #start(String, long, int, Set, Map, java.util.concurrent.Executor, RebuildFallback)};
     * {@code stream}: each tensor is also readable as soon as it is solved and checked, before its
     * rank is published ({@link RebuiltTrees}), until the asker calls {@link Pending#release()}.
     */
    public Pending start(String job, long step, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons, java.util.concurrent.Executor async, RebuildFallback fallback,
            boolean stream) throws IOException, InterruptedException {
        Tiers.Settings s = generations.tiers().settings(job);
        if (s.groupSize() == 0) {
            return Pending.NONE;
        }
        return start(job, step, s, Ring.of(generations.config(job, step), generations.world(job, step),
                daemons.keySet()), lost, lostWorkers, daemons, async, fallback, stream);
    }

    /** {@link #rebuild(String, long, int, Set, Map)} of a generation this daemon may not know (a restore's). */
    Set<Integer> rebuild(String job, long step, Tiers.Settings s, Ring ring, int lost, Set<Integer> lostWorkers,
            Map<Integer, InetSocketAddress> daemons) throws IOException, InterruptedException {
        return join(start(job, step, s, ring, lost, lostWorkers, daemons, Runnable::run, RebuildFallback.NONE, false));
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
            Map<Integer, InetSocketAddress> daemons, java.util.concurrent.Executor async, RebuildFallback fallback,
            boolean stream) throws IOException, InterruptedException {
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
        Decode d = new Decode(paths, step, g, GroupManifests.parse(members), gone, daemons, stream);
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
                return asker(running, d);
            }
            r = new Running(d.pending(), new java.util.concurrent.atomic.AtomicReference<>(fallback),
                    new java.util.concurrent.atomic.AtomicInteger());
            inFlight.put(key, r);
        }
        Pending p = r.p();
        Pending mine = asker(r, d);
        try {
            async.execute(() -> {
                try {
                    solve(d, js, parityDaemons, p, r.fallback()::get);
                } finally {
                    ended(key, r, d);
                }
            });
        } catch (RejectedExecutionException e) {
            ended(key, r, d);
            fail(p, e);
            throw new IOException("no thread to rebuild " + key + " on", e);
        }
        return mine;
    }

    /** {@code r}'s pending ranks for one more asker, whose release removes the streamed trees once none is left. */
    private Pending asker(Running r, Decode d) {
        if (!d.stream) {
            return r.p();
        }
        r.holders().incrementAndGet();
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        return r.p().withRelease(() -> {
            if (!once.compareAndSet(false, true)) {
                return;
            }
            synchronized (inFlight) {
                if (r.holders().decrementAndGet() > 0 || inFlight.containsValue(r)) {
                    return; // another asker still reads them, or the rebuild still writes: it removes them as it ends
                }
            }
            RebuiltTrees.dropStreamed(store, d.paths.job(), d.step, r.p().ranks().keySet());
        });
    }

    /** The rebuild {@code r} ended: no longer shared; its streamed trees go when no asker is left. */
    private void ended(String key, Running r, Decode d) {
        synchronized (inFlight) {
            inFlight.remove(key, r);
            if (!d.stream || r.holders().get() > 0) {
                return;
            }
        }
        RebuiltTrees.dropStreamed(store, d.paths.job(), d.step, r.p().ranks().keySet());
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
        final boolean stream;
        /** When every block the decode needs was read (System.nanoTime). */
        volatile long readAt;
        private final int g;
        private final GroupManifests manifests;
        private final List<Integer> gone;
        private final Map<Integer, InetSocketAddress> daemons;

        Decode(JobLayout paths, long step, int g, GroupManifests manifests, List<Integer> gone,
                Map<Integer, InetSocketAddress> daemons, boolean stream) {
            this.paths = paths;
            this.step = step;
            this.g = g;
            this.manifests = manifests;
            this.gone = gone;
            this.daemons = daemons;
            this.stream = stream;
        }

        /** Per lost worker rebuilt, its ranks. */
        Map<Integer, List<Integer>> ranksByWorker() {
            Map<Integer, List<Integer>> out = new TreeMap<>();
            for (int w : gone) {
                out.put(w, manifests.byWorker().get(w).stream().map(SealManifest::rank).toList());
            }
            return out;
        }

        /** The rebuild's ranks, any replica manifest or streamed tree of them left from before removed. */
        Pending pending() {
            Map<Integer, SealManifest> ms = new TreeMap<>();
            Map<Integer, CompletableFuture<String>> ranks = new TreeMap<>();
            for (int w : gone) {
                for (SealManifest m : manifests.byWorker().get(w)) {
                    RebuiltTrees.deleteIfThere(store, paths.replicaManifest(step, m.rank()));
                    ms.put(m.rank(), m);
                    ranks.put(m.rank(), new CompletableFuture<>());
                }
            }
            RebuiltTrees.dropStreamed(store, paths.job(), step, ms.keySet());
            return new Pending(Set.copyOf(gone), Map.copyOf(ms), java.util.Collections.unmodifiableMap(ranks), () -> { });
        }

        /**
         * {@code js}: the parity blocks used (as many as lost members), {@code holders}: their daemons;
         * solves range by range ({@link RangeSolve}), writes each segment as it is solved and checked
         * ({@link RebuiltTrees}), and completes each rank's future once its tree is published.
         */
        void run(List<Integer> js, List<InetSocketAddress> holders, Map<Integer, CompletableFuture<String>> published)
                throws IOException, InterruptedException {
            RebuiltTrees trees = new RebuiltTrees(store, paths.job(), step, stream);
            Map<Integer, SealManifest> byRank = new TreeMap<>();
            Map<Integer, Integer> left = new TreeMap<>(); // per rank, its segments not written yet
            for (int w : gone) {
                for (SealManifest m : manifests.byWorker().get(w)) {
                    byRank.put(m.rank(), m);
                    left.put(m.rank(), m.tensors().size() + m.files().size());
                    trees.begin(m);
                }
            }
            for (SealManifest m : byRank.values()) {
                if (left.get(m.rank()) == 0) { // nothing saved: published empty at once
                    trees.publish(m);
                    published.get(m.rank()).complete(PARITY);
                }
            }
            List<StorePath> parityPaths = js.stream().map(this::parity).toList();
            solver.run(new RangeSolve.Group(manifests, gone, js, holders, parityPaths, daemons, paths, step),
                    (lost, segment, bytes) -> {
                        trees.segment(segment, bytes);
                        if (left.merge(segment.rank(), -1, Integer::sum) == 0) {
                            trees.publish(byRank.get(segment.rank()));
                            published.get(segment.rank()).complete(PARITY);
                        }
                    });
            readAt = System.nanoTime();
        }

        private StorePath parity(int j) {
            return paths.parity(step, g).child(Integer.toString(j));
        }
    }
}
