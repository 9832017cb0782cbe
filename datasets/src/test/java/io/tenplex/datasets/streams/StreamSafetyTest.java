package io.tenplex.datasets.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A hostile or failing world around a stream's coordinator: re-partitions that fail mid-way put
 * every sample back, racing re-partitions and creates leave one winner, and the peer-only steps
 * refuse (or change nothing) outside their phase.
 */
class StreamSafetyTest {
    private static final String A = "127.0.0.1:2001";
    private static final String B = "127.0.0.1:2002";
    private static final String C = "127.0.0.1:2003";
    private final InMemoryStreamPeers peers = new InMemoryStreamPeers();
    private final List<StreamService> services = peers.started;

    private StreamService daemon(String addr) {
        return peers.start(addr);
    }

    @AfterEach
    void stop() {
        peers.closeAll();
    }

    private static StreamConfig fifo(int maxSampleBytes, String... ranks) {
        return new StreamConfig(new StreamSpec(Policy.FIFO, 100, 0, maxSampleBytes, 0, 1), List.of(ranks), List.of(), 0,
                false);
    }

    /** Pushes {@code n} samples round robin, each to its rank's daemon. */
    private void push(StreamService via, String job, int n, int bytes) throws Exception {
        for (int i = 0; i < n; i++) {
            int rank = via.pick(job, null);
            assertEquals("accepted", peers.daemons.get(via.owner(job, rank)).push(job, rank, new byte[bytes], 0, null).get()
                    .outcome());
        }
    }

    private int population(String job) {
        return services.stream().filter(s -> s.all().stream().anyMatch(t -> t.job().equals(job)))
                .mapToInt(s -> s.status(job).local().stream().mapToInt(RankStatus::population).sum()).sum();
    }

    private static StoreException.Kind kindOf(ExecutionException e) {
        return ((StoreException) e.getCause()).kind();
    }

    @Test
    void repartition_toAMalformedAddress_isRefusedBeforeAnythingChanges() throws Exception {
        StreamService a = daemon(A);
        a.create("j", fifo(8, A)).get();
        push(a, "j", 20, 4);
        for (String bad : List.of("127.0.0.1:notaport", "a b:1", "127.0.0.1:0", "127.0.0.1:70000", ":1")) {
            assertThrows(IllegalArgumentException.class, () -> a.repartition("j", List.of(bad)), bad);
        }
        assertEquals(20, population("j"));
        assertFalse(a.status("j").local().get(0).frozen());
    }

    @Test
    void repartition_toADaemonThatDoesNotAnswer_failsAndChangesNothing() throws Exception {
        StreamService a = daemon(A);
        a.create("j", fifo(8, A)).get();
        push(a, "j", 20, 4);
        ExecutionException e = assertThrows(ExecutionException.class, () -> a.repartition("j", List.of(A, C)).get());
        assertTrue(e.getCause().getMessage().contains(C), e.getCause().getMessage());
        assertEquals(20, population("j"));
        assertEquals(List.of(A), a.config("j").ranks());
        push(a, "j", 1, 4); // not frozen
    }

    @Test
    void repartition_failingAfterTheSamplesLeft_putsEveryOneBack_andUnfreezes() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        StreamService c = daemon(C);
        a.create("j", fifo(8, A, B)).get();
        push(a, "j", 20, 4);
        peers.failImports.add(C);
        ExecutionException e = assertThrows(ExecutionException.class, () -> a.repartition("j", List.of(C)).get());
        assertEquals(StoreException.Kind.BAD_GATEWAY, kindOf(e));
        assertTrue(e.getCause().getMessage().contains("restored"), e.getCause().getMessage());
        assertEquals(List.of(A, B), b.config("j").ranks());
        assertThrows(StoreException.class, () -> c.config("j")); // what it took is gone
        assertEquals(20, population("j"));
        assertFalse(a.status("j").local().get(0).frozen());
        assertFalse(b.status("j").local().get(0).frozen());
        push(a, "j", 2, 4);
        peers.failImports.clear();
        a.repartition("j", List.of(C)).get(); // and it can be re-partitioned afterwards
        assertEquals(22, c.status("j").local().get(0).population());
    }

    @Test
    void repartition_whileAnotherHoldsTheStream_isAConflict_andLosesNothing() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        a.create("j", fifo(8, A, B)).get();
        push(a, "j", 20, 4);
        var taken = b.exportLocal("j", List.of(A, B)); // another coordinator's first step at B
        ExecutionException e = assertThrows(ExecutionException.class, () -> a.repartition("j", List.of(A)).get());
        assertEquals(StoreException.Kind.CONFLICT, kindOf(e));
        assertEquals(List.of(A, B), a.config("j").ranks());
        b.importLocal("j", taken); // the other gives up: its samples go back
        b.unfreezeLocal("j");
        assertEquals(20, population("j"));
        a.repartition("j", List.of(A)).get();
        assertEquals(20, a.status("j").local().get(0).population());
    }

    /**
     * Another coordinator froze the old daemons and gave B the new config (ranks at C) but not C yet: a re-partition
     * asked of B then is a conflict, not a failure that names C, and it changes nothing (it once read B's half-given
     * config, tried to export at C, which had no stream, and answered 502 "could not restore C").
     */
    @Test
    void repartition_atADaemonMidwayThroughAnotherRepartition_isAConflict_andChangesNothing() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        daemon(C);
        a.create("j", fifo(8, A, B)).get();
        push(a, "j", 20, 4);
        var fromA = a.exportLocal("j", List.of(A, B)); // the other coordinator's steps (1) and (2), up to B
        var fromB = b.exportLocal("j", List.of(A, B));
        StreamConfig toC = a.config("j").withRanks(List.of(C));
        a.configure("j", toC, true);
        b.configure("j", toC, true);
        ExecutionException e = assertThrows(ExecutionException.class, () -> b.repartition("j", List.of(A, B, C)).get());
        assertEquals(StoreException.Kind.CONFLICT, kindOf(e), e.getMessage());
        assertEquals(toC.ranks(), b.config("j").ranks());
        assertTrue(b.status("j").local().isEmpty() || b.status("j").local().stream().allMatch(RankStatus::frozen));
        // the other coordinator gives up: every sample goes back
        StreamConfig old = fifo(8, A, B);
        a.configure("j", old, true);
        b.configure("j", old, true);
        a.importLocal("j", fromA);
        b.importLocal("j", fromB);
        a.unfreezeLocal("j");
        b.unfreezeLocal("j");
        assertEquals(20, population("j"));
    }

    @Test
    void repartitions_racing_leaveEverySampleOnce() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        daemon(C);
        for (int round = 0; round < 10; round++) {
            String job = "race" + round;
            a.create(job, fifo(8, A, B)).get();
            push(a, job, 40, 4);
            CountDownLatch go = new CountDownLatch(1);
            CompletableFuture<StreamStatus> one = CompletableFuture.supplyAsync(() -> await(go))
                    .thenCompose(x -> a.repartition(job, List.of(C)));
            CompletableFuture<StreamStatus> two = CompletableFuture.supplyAsync(() -> await(go))
                    .thenCompose(x -> b.repartition(job, List.of(A, B, C)));
            go.countDown();
            int won = (succeeded(one) ? 1 : 0) + (succeeded(two) ? 1 : 0);
            assertTrue(won >= 1, "round " + round);
            assertEquals(40, population(job), "round " + round);
        }
    }

    private static boolean await(CountDownLatch l) {
        try {
            l.await();
            return true;
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean succeeded(CompletableFuture<?> f) {
        try {
            f.join();
            return true;
        } catch (CompletionException e) {
            assertEquals(StoreException.Kind.CONFLICT, ((StoreException) e.getCause()).kind(), e.getMessage());
            return false;
        }
    }

    @Test
    void repartition_byADaemonThatHoldsNoRank_givesItRanksAgain() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        a.create("j", fifo(8, A, B)).get();
        push(a, "j", 10, 4);
        a.repartition("j", List.of(A)).get(); // b keeps the config, holds no rank
        b.repartition("j", List.of(A, B)).get();
        assertEquals(List.of(A, B), a.config("j").ranks());
        assertEquals(10, population("j"));
        assertEquals(5, b.status("j").local().get(0).population());
    }

    @Test
    void peerSteps_outsideTheirPhase_refuseOrChangeNothing() throws Exception {
        StreamService a = daemon(A);
        a.create("j", fifo(8, A)).get();
        push(a, "j", 10, 4);
        a.configure("j", a.config("j"), false); // the same config: its samples stay
        a.configure("j", a.config("j"), true);
        assertEquals(10, population("j"));
        StoreException other = assertThrows(StoreException.class, () -> a.configure("j", fifo(8, A, A), false));
        assertEquals(StoreException.Kind.CONFLICT, other.kind());
        StoreException imp = assertThrows(StoreException.class, () -> a.importLocal("j",
                java.util.Map.of(0, List.of(new Sample(1, new byte[1], 0)))));
        assertEquals(StoreException.Kind.CONFLICT, imp.kind());
        assertThrows(StoreException.class, () -> a.exportNext("j"));
        a.unfreezeLocal("j"); // nothing to do
        assertEquals(10, population("j"));
        var taken = a.exportLocal("j", null);
        StoreException twice = assertThrows(StoreException.class, () -> a.exportLocal("j", null));
        assertEquals(StoreException.Kind.CONFLICT, twice.kind());
        a.importLocal("j", taken);
        a.unfreezeLocal("j");
        assertEquals(10, population("j"));
    }

    @Test
    void creates_racing_oneWins_andTheDaemonsAgree() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        for (int round = 0; round < 20; round++) {
            String job = "c" + round;
            CountDownLatch go = new CountDownLatch(1);
            StreamConfig small = fifo(8, A, B);
            StreamConfig large = fifo(16, B, A);
            CompletableFuture<StreamStatus> one = CompletableFuture.supplyAsync(() -> await(go))
                    .thenCompose(x -> a.create(job, small));
            CompletableFuture<StreamStatus> two = CompletableFuture.supplyAsync(() -> await(go))
                    .thenCompose(x -> b.create(job, large));
            go.countDown();
            int won = (succeeded(one) ? 1 : 0) + (succeeded(two) ? 1 : 0);
            assertEquals(1, won, "round " + round);
            assertEquals(a.config(job), b.config(job));
        }
    }

    @Test
    void streamMemory_fullWhileSamplesAreHeld_thenFreedByReads_and507WhenNothingCanDrain() throws Exception {
        StreamService d = new StreamService(peers, new StreamMemory(100));
        d.setSelf("127.0.0.1", 2009);
        services.add(d);
        d.create("j", fifo(64, "127.0.0.1:2009")).get();
        assertEquals("accepted", d.push("j", 0, new byte[40], 0, null).get().outcome());
        assertEquals("accepted", d.push("j", 0, new byte[40], 0, null).get().outcome());
        assertEquals("memory", d.push("j", 0, new byte[40], 0, null).get().outcome()); // 429: reads free memory
        assertEquals(80, d.memory().used());
        d.read("j", 0, 1, 0, null).get();
        assertEquals(40, d.memory().used());
        assertEquals("accepted", d.push("j", 0, new byte[40], 0, null).get().outcome());
        d.create("k", fifo(64, "127.0.0.1:2009")).get();
        StoreException none = assertThrows(StoreException.class, () -> d.push("k", 0, new byte[40], 0, null));
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, none.kind()); // 507: nothing of k can drain
        d.deleteLocal("j");
        assertEquals(0, d.memory().used());
        assertEquals("accepted", d.push("k", 0, new byte[40], 0, null).get().outcome());
    }

    @Test
    void aBatchThatNeverReachedItsReader_goesBack_asIfNeverRead() throws Exception {
        StreamService a = daemon(A);
        a.create("f", fifo(8, A)).get();
        a.create("r", new StreamConfig(new StreamSpec(Policy.RESERVOIR, 100, 0, 8, 0, 1), List.of(A), List.of(), 0,
                false)).get();
        for (int i = 0; i < 5; i++) {
            a.push("f", 0, new byte[] {(byte) i}, 0, null).get();
            a.push("r", 0, new byte[] {(byte) i}, 0, null).get();
        }
        StreamBatch lost = a.read("f", 0, 3, 0, null).get();
        lost.unsent().run();
        RankStatus f = a.status("f").local().get(0);
        assertEquals(5, f.population());
        assertEquals(0, f.delivered());
        assertEquals(0, a.read("f", 0, 5, 0, null).get().samples().get(0)[0]); // in order again
        a.read("r", 0, 4, 0, null).get().unsent().run();
        RankStatus r = a.status("r").local().get(0);
        assertEquals(5, r.unseen());
        assertEquals(0, r.delivered());
    }

    @Test
    void batches_holdAtMost256MiB() {
        assertEquals(32, StreamService.batchSize(new StreamSpec(Policy.FIFO, 64, 0, 8 << 20, 0, 1), 256));
        assertEquals(256, StreamService.batchSize(new StreamSpec(Policy.FIFO, 64, 0, 1 << 20, 0, 1), 256));
        assertEquals(1, StreamService.batchSize(new StreamSpec(Policy.FIFO, 64, 0, 8 << 20, 0, 1), 1));
    }

    @Test
    void create_throughADaemonThatHoldsNoRank_keepsItThereToo() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        assertEquals(List.of(B), a.create("j", fifo(8, B)).get().ranks());
        assertEquals(a.config("j"), b.config("j"));
    }

    @Test
    void create_failingAtADaemon_removesItFromTheOthers() {
        StreamService a = daemon(A);
        ExecutionException e = assertThrows(ExecutionException.class, () -> a.create("j", fifo(8, A, C)).get());
        assertTrue(e.getCause().getMessage().contains(C), e.getCause().getMessage());
        assertThrows(StoreException.class, () -> a.config("j"));
    }

    @Test
    void export_movesLargeBuffersInBoundedPages() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        int mib = 1 << 20;
        a.create("j", new StreamConfig(new StreamSpec(Policy.FIFO, 100, 0, mib, 0, 1), List.of(B), List.of(A), 0,
                false)).get();
        push(a, "j", 20, mib);
        a.repartition("j", List.of(A)).get();
        assertTrue(peers.pages.get() >= 3, "pages " + peers.pages.get());
        assertEquals(20, a.status("j").local().get(0).population());
        assertTrue(b.status("j").local().isEmpty());
    }
}
