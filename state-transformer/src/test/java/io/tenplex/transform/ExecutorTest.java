package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The executor against in-memory ports (fakes at the edge: a source that serves the reference
 * interpreter's shards, optionally dead or corrupting, and a sink that collects new shards).
 */
class ExecutorTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private final ExecutorService pool = Executors.newFixedThreadPool(4);

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    static Ptc ptc(int tp, int pp, int dp, int perWorker) {
        return Ptc.packed(MegatronLayout.model(GPT, pp), ParallelConfig.of(tp, pp, dp), perWorker);
    }

    /** Serves old shards; ranks in {@code dead} fail, ranks in {@code corruptOnce} flip a byte on first use. */
    static final class FakeSource implements ShardSource {
        final Map<Integer, Map<String, ReferenceInterpreter.Bytes>> shards;
        final Set<Integer> dead = ConcurrentHashMap.newKeySet();
        final Set<Integer> corruptOnce = ConcurrentHashMap.newKeySet();

        FakeSource(Map<Integer, Map<String, ReferenceInterpreter.Bytes>> shards) {
            this.shards = shards;
        }

        @Override
        public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException {
            if (dead.contains(rank)) {
                throw new IOException("connection refused by rank " + rank + " (" + device + ")");
            }
            ReferenceInterpreter.Bytes b = shards.get(rank).get(key);
            int item = (int) (b.data().length / Math.max(1, b.shape().volume()));
            byte[] out = new byte[(int) (region.volume() * item)];
            ReferenceInterpreter.copy(b.data(), b.shape(), region, out, region.shape(), new long[region.rank()], item);
            CRC32C crc = new CRC32C();
            crc.update(out);
            if (corruptOnce.remove(rank) && out.length > 0) {
                out[out.length / 2] ^= 0x40;
            }
            dst.put(out);
            return OptionalInt.of((int) crc.getValue());
        }
    }

    /** Collects the new shards; keeps are resolved against the old shards. */
    static class FakeSink implements ShardSink {
        final Map<Integer, Map<String, ReferenceInterpreter.Bytes>> old;
        final Map<Integer, Map<String, byte[]>> done = new ConcurrentHashMap<>();
        final Map<String, ByteBuffer> open = new ConcurrentHashMap<>();

        FakeSink(Map<Integer, Map<String, ReferenceInterpreter.Bytes>> old) {
            this.old = old;
        }

        @Override
        public ByteBuffer open(int rank, String key, Shape shape, io.tenplex.ptc.DType dtype) {
            ByteBuffer b = ByteBuffer.allocateDirect((int) (shape.volume() * dtype.itemSize()));
            open.put(rank + "/" + key, b);
            return b;
        }

        @Override
        public void keep(int rank, String key, int sourceRank, String sourceKey) {
            done.computeIfAbsent(rank, r -> new ConcurrentHashMap<>()).put(key, old.get(sourceRank).get(sourceKey).data());
        }

        @Override
        public void complete(int rank, String key) {
            ByteBuffer b = open.remove(rank + "/" + key);
            byte[] data = new byte[b.capacity()];
            b.get(0, data);
            done.computeIfAbsent(rank, r -> new ConcurrentHashMap<>()).put(key, data);
        }
    }

    /** A sink that shares one new shard's bytes with another (as the store links them). */
    static final class AliasingSink extends FakeSink {
        final Map<String, String> aliased = new ConcurrentHashMap<>();
        final Set<String> opened = ConcurrentHashMap.newKeySet();

        AliasingSink(Map<Integer, Map<String, ReferenceInterpreter.Bytes>> old) {
            super(old);
        }

        @Override
        public ByteBuffer open(int rank, String key, Shape shape, io.tenplex.ptc.DType dtype) {
            opened.add(rank + "/" + key);
            return super.open(rank, key, shape, dtype);
        }

        @Override
        public boolean aliases() {
            return true;
        }

        @Override
        public void alias(int rank, String key, int fromRank, String fromKey) {
            byte[] from = done.get(fromRank).get(fromKey);
            assertTrue(from != null, "aliased before " + fromRank + "/" + fromKey + " was complete");
            done.computeIfAbsent(rank, r -> new ConcurrentHashMap<>()).put(key, from);
            aliased.put(rank + "/" + key, fromRank + "/" + fromKey);
        }
    }

    /**
     * (2,2,1) -> (1,1,4) on one worker: the four data-parallel ranks need the same shards, which are
     * assembled once and shared by the other three (nothing opened, read or written for them); every
     * rank's bytes are exact, and the bytes read are a quarter of the plan's.
     */
    @Test
    void dataParallelReplicasOnOneWorker_areAssembledOnce_andShared() throws Exception {
        Ptc from = ptc(2, 2, 1, 4);
        Ptc to = ptc(1, 1, 4, 4);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, 13);
        var old = ReferenceInterpreter.shard(from, full);
        FakeSource source = new FakeSource(new ConcurrentHashMap<>(old));
        AliasingSink sink = new AliasingSink(old);
        Plan plan = Planner.plan(from, to);
        ExecutionReport r = new Executor(source, pool, 3).run(plan, s -> true, sink);
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < 4; rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), sink.done.get(rank).get(e.getKey()), rank + " " + e.getKey());
            }
        }
        int perRank = want.get(0).size();
        assertEquals(4 * perRank, sink.opened.size() + r.aliased() + r.kept(), r.toString());
        for (String key : want.get(0).keySet()) { // rank 0 may keep a shard it held whole; the rest is assembled once
            assertEquals(1, sink.opened.stream().filter(o -> o.endsWith("/" + key)).count(), key + " opened once");
        }
        assertTrue(r.aliased() > 0 && r.aliasedBytes() > r.localBytes(), "the replicas share: " + r);
        assertEquals(r.aliased(), sink.aliased.size());
        sink.aliased.keySet().forEach(k -> assertTrue(!sink.opened.contains(k), k + " opened although aliased"));
        long planned = plan.report().intraWorker() + plan.report().onDevice();
        assertTrue(r.localBytes() * 3 < planned, "read once, not four times: " + r.localBytes() + " of " + planned);
    }

    /**
     * Shards that only look alike are not shared: a tensor-parallel split (each rank a different region of
     * the same source shard) with an aliasing sink, the pieces as a part decoded from the wire carries
     * them (no true global region), is byte-exact, and so is a change with replicas.
     */
    @Test
    void aliasing_neverSharesShardsOfDifferentContent_evenWithoutGlobalRegions() throws Exception {
        for (Ptc[] change : new Ptc[][] {{ptc(1, 1, 1, 4), ptc(4, 1, 1, 4)}, {ptc(2, 2, 1, 4), ptc(2, 1, 2, 4)},
            {ptc(1, 1, 2, 4), ptc(2, 1, 2, 4)}}) {
            Map<String, byte[]> full = ReferenceInterpreter.fullTensors(change[0], 17);
            var old = ReferenceInterpreter.shard(change[0], full);
            AliasingSink sink = new AliasingSink(old);
            Plan plan = Planner.plan(change[0], change[1]);
            java.util.List<ShardPlan> decoded = plan.shards().stream().map(s -> new ShardPlan(s.destRank(), s.destDevice(),
                    s.tensor(), s.key(), s.shape(), s.dtype(), s.pieces().stream().map(p -> new Piece(p.kind(),
                    p.sourceRank(), p.sourceDevice(), p.sourceKey(), p.source(), Region.at(p.destOffset(),
                    p.source().shape().dims()), p.destOffset(), p.bytes(), p.replicas())).toList(), s.padding())).toList();
            new Executor(new FakeSource(new ConcurrentHashMap<>(old)), pool, 3).run(decoded, plan::sourceDevice, sink,
                    new java.util.concurrent.atomic.AtomicLong(), -1);
            var want = ReferenceInterpreter.shard(change[1], full);
            for (int rank = 0; rank < change[1].worldSize(); rank++) {
                for (var e : want.get(rank).entrySet()) {
                    assertArrayEquals(e.getValue().data(), sink.done.get(rank).get(e.getKey()), rank + " " + e.getKey());
                }
            }
        }
    }

    private void runAndCompare(Ptc from, Ptc to, FakeSource source, ExecutionReportCheck check) throws Exception {
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, 11);
        var old = ReferenceInterpreter.shard(from, full);
        source.shards.putAll(old);
        FakeSink sink = new FakeSink(old);
        Plan plan = Planner.plan(from, to);
        ExecutionReport r = new Executor(source, pool, 3).run(plan, s -> true, sink);
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), sink.done.get(rank).get(e.getKey()), rank + " " + e.getKey());
            }
        }
        assertEquals(plan.shards().size(), r.shards());
        assertEquals(plan.report().interWorker(), r.remoteBytes());
        check.check(r);
    }

    interface ExecutionReportCheck {
        void check(ExecutionReport r);
    }

    @Test
    void executesPlans_byteExact_withKeepsAliased() throws Exception {
        runAndCompare(ptc(2, 2, 2, 4), ptc(4, 1, 2, 4), new FakeSource(new ConcurrentHashMap<>()),
                r -> assertEquals(0, r.retries()));
        runAndCompare(ptc(2, 2, 2, 4), ptc(2, 2, 2, 4), new FakeSource(new ConcurrentHashMap<>()),
                r -> assertEquals(r.shards(), r.kept()));
        runAndCompare(ptc(4, 1, 2, 4), ptc(1, 4, 1, 2), new FakeSource(new ConcurrentHashMap<>()),
                r -> assertTrue(r.localBytes() > 0)); // every stage finds all it needs on its own worker
    }

    @Test
    void corruptedTransfer_isDetected_andRefetched() throws Exception {
        FakeSource src = new FakeSource(new ConcurrentHashMap<>());
        src.corruptOnce.add(4);
        src.corruptOnce.add(5);
        runAndCompare(ptc(2, 2, 2, 4), ptc(4, 1, 2, 4), src, r -> {
            assertEquals(2, r.corrupted());
            assertTrue(r.retries() >= 2);
        });
    }

    @Test
    void corruptedTransfer_withoutAnotherReplica_isRefetchedFromTheSameHolder() throws Exception {
        FakeSource src = new FakeSource(new ConcurrentHashMap<>());
        src.corruptOnce.add(3); // data-parallel 1: rank 3's shards exist nowhere else
        runAndCompare(ptc(2, 2, 1, 2), ptc(4, 1, 1, 4), src, r -> {
            assertEquals(1, r.corrupted());
            assertEquals(1, r.retries());
        });
    }

    @Test
    void deadPeer_withReplicas_isWorkedAround() throws Exception {
        FakeSource src = new FakeSource(new ConcurrentHashMap<>());
        src.dead.add(4); // rank 4 on worker 1; data-parallel replicas of its shards live on rank 6
        runAndCompare(ptc(2, 2, 2, 4), ptc(4, 1, 2, 4), src, r -> assertTrue(r.retries() > 0));
    }

    /**
     * A run cancelled while it reads (its part was aborted) takes no further piece: the read under way
     * ends, the run fails naming why, and the pieces it had not taken are never read.
     */
    @Test
    void cancelledWhileReading_takesNoFurtherPiece() throws Exception {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 8));
        Plan plan = Planner.plan(from, to);
        long pieces = plan.shards().stream().mapToLong(x -> x.pieces().size()).sum();
        FakeSource inner = new FakeSource(old);
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.CountDownLatch reading = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch cancelled = new java.util.concurrent.CountDownLatch(1);
        ShardSource held = (rank, device, key, region, dst) -> {
            reads.incrementAndGet();
            reading.countDown();
            try {
                cancelled.await(); // the first reads wait for the cancel
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
            return inner.read(rank, device, key, region, dst);
        };
        Executor run = new Executor(held, pool, 1);
        java.util.concurrent.ExecutorService caller = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<?> f = caller.submit(() -> run.run(plan, s -> true, new FakeSink(old)));
            reading.await();
            run.cancel("plan p9 was aborted");
            cancelled.countDown();
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> f.get(30, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("plan p9 was aborted"), e.getCause().getMessage());
            assertTrue(reads.get() < pieces, reads.get() + " reads of " + pieces + " pieces");
        } finally {
            cancelled.countDown();
            caller.shutdownNow();
        }
    }

    @Test
    void deadPeer_withoutReplica_failsWithAClearMessage() {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 3));
        FakeSource src = new FakeSource(old);
        src.dead.add(3);
        FakeSink sink = new FakeSink(old);
        ExecutionFailedException e = assertThrows(ExecutionFailedException.class,
                () -> new Executor(src, pool, 2).run(Planner.plan(from, to), s -> true, sink));
        assertTrue(e.getMessage().contains("failed on every replica [3]"), e.getMessage());
        assertTrue(e.getMessage().contains("connection refused by rank 3"), e.getMessage());
    }

    /**
     * A rank not ready yet (being rebuilt): every piece not reading it is read while it waits, even
     * one lane per flow with the rank's own worker holding other ranks; then its pieces follow.
     */
    @Test
    void lateRank_piecesNotReadingIt_completeWhileItWaits() throws Exception {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, 5);
        var old = ReferenceInterpreter.shard(from, full);
        Plan plan = Planner.plan(from, to);
        int late = 3; // data-parallel 1: its shards exist nowhere else; rank 2 shares its worker
        long others = plan.shards().stream().flatMap(s -> s.pieces().stream())
                .filter(p -> p.kind() != Piece.Kind.KEEP && p.sourceRank() != late).count();
        assertTrue(others > 0 && others < plan.shards().stream().mapToLong(s -> s.pieces().size()).sum());
        java.util.concurrent.CountDownLatch othersRead = new java.util.concurrent.CountDownLatch((int) others);
        java.util.concurrent.atomic.AtomicInteger lateReadEarly = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.CompletableFuture<Void> rebuilt = new java.util.concurrent.CompletableFuture<>();
        FakeSource inner = new FakeSource(old);
        ShardSource counting = (rank, device, key, region, dst) -> {
            if (rank != late) {
                othersRead.countDown();
            } else if (!rebuilt.isDone()) {
                lateReadEarly.incrementAndGet();
            }
            return inner.read(rank, device, key, region, dst);
        };
        FakeSink sink = new FakeSink(old);
        Executor ex = new Executor(new AwaitedRanks(counting, Map.of(late, rebuilt), java.time.Duration.ofMinutes(1)),
                pool, 1, Map.of(), Set.of(late));
        var run = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return ex.run(plan, s -> true, sink);
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        assertTrue(othersRead.await(30, java.util.concurrent.TimeUnit.SECONDS),
                "pieces not reading rank " + late + " still waiting: " + othersRead.getCount() + " of " + others);
        assertTrue(!run.isDone(), "the run must wait for rank " + late);
        rebuilt.complete(null);
        ExecutionReport r = run.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, lateReadEarly.get());
        assertEquals(plan.shards().size(), r.shards());
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), sink.done.get(rank).get(e.getKey()), rank + " " + e.getKey());
            }
        }
    }

    @Test
    void lateRank_thatFails_failsTheRunNamingIt() {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 3));
        java.util.concurrent.CompletableFuture<Void> rebuilt = java.util.concurrent.CompletableFuture.failedFuture(
                new IOException("CRC32C mismatch in the rebuilt block"));
        FakeSink sink = new FakeSink(old);
        ExecutionFailedException e = assertThrows(ExecutionFailedException.class, () -> new Executor(
                new AwaitedRanks(new FakeSource(old), Map.of(3, rebuilt), java.time.Duration.ofMinutes(1)), pool, 2,
                Map.of(), Set.of(3)).run(Planner.plan(from, to), s -> true, sink));
        assertTrue(e.getMessage().contains("rank 3 did not become readable: CRC32C mismatch"), e.getMessage());
    }

    /**
     * Reads waiting for a rank that then fails (its rebuild failed) are woken at once, long before
     * their timeout, and the run fails naming the rank and the reason.
     */
    @Test
    void lateRank_failingWhileReadsWait_wakesThemAndFailsTheRun() throws Exception {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 4));
        int late = 3;
        java.util.concurrent.CompletableFuture<Void> rebuilt = new java.util.concurrent.CompletableFuture<>();
        ShardSource awaited = new AwaitedRanks(new FakeSource(old), Map.of(late, rebuilt), java.time.Duration.ofHours(1));
        java.util.concurrent.CountDownLatch waiting = new java.util.concurrent.CountDownLatch(1);
        ShardSource entering = (rank, device, key, region, dst) -> {
            if (rank == late) {
                waiting.countDown(); // a read of the late rank is about to wait
            }
            return awaited.read(rank, device, key, region, dst);
        };
        FakeSink sink = new FakeSink(old);
        Executor ex = new Executor(entering, pool, 1, Map.of(), Set.of(late));
        var run = java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                ex.run(Planner.plan(from, to), s -> true, sink);
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        assertTrue(waiting.await(30, java.util.concurrent.TimeUnit.SECONDS), "no read of rank " + late + " started");
        assertTrue(!run.isDone(), "the run must wait for rank " + late);
        rebuilt.completeExceptionally(new IOException("no level could serve it"));
        var e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> run.get(30, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof ExecutionFailedException, String.valueOf(e.getCause()));
        assertTrue(e.getCause().getMessage().contains("rank 3 did not become readable: no level could serve it"),
                e.getCause().getMessage());
    }

    /**
     * A paced flow reads a late rank's pieces unpaced: its rate planned them as read from the start,
     * but they only become readable once the rank is ready. Its other pieces keep the flow's pace.
     */
    @Test
    void lateRank_piecesAreReadUnpaced_theOthersAtTheFlowsPace() throws Exception {
        Ptc from = ptc(2, 2, 1, 2);
        Ptc to = ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 6));
        int late = 3;
        FakeSource inner = new FakeSource(old);
        Map<Integer, java.util.Set<Long>> paces = new ConcurrentHashMap<>();
        ShardSource recording = new ShardSource() {
            @Override
            public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst)
                    throws IOException {
                return read(rank, device, key, region, dst, 0);
            }

            @Override
            public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
                    throws IOException {
                paces.computeIfAbsent(rank, r -> ConcurrentHashMap.newKeySet()).add(pace);
                return inner.read(rank, device, key, region, dst);
            }
        };
        Map<Integer, Long> rates = new java.util.HashMap<>();
        for (Device d : from.devices()) {
            rates.put(d.worker(), 1_000_000_000L); // every source worker's flow paced
        }
        FakeSink sink = new FakeSink(old);
        new Executor(recording, pool, 2, rates, Set.of(late)).run(Planner.plan(from, to), s -> true, sink);
        assertEquals(java.util.Set.of(0L), paces.get(late), "rank " + late + " read at " + paces.get(late));
        paces.forEach((rank, p) -> assertTrue(rank == late || !p.contains(0L), "rank " + rank + " read at " + p));
    }
}
