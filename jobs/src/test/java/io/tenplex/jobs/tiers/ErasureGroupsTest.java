package io.tenplex.jobs.tiers;

import static io.tenplex.jobs.tiers.TierFixture.PATHS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.LocalPlanner;
import io.tenplex.transform.ShardPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * L3 over four simulated daemons, k = 3, m = 1: groups {0, 1, 2} (parity on worker 3) and {3}
 * (parity on worker 0). A lost worker's ranks are rebuilt on the coordinator (worker 0).
 */
class ErasureGroupsTest {
    private static final Tiers.Settings K3M1 = new Tiers.Settings(0, 3, 1, 0);
    private final FakeCluster cluster = new FakeCluster(4);
    private final TierFixture job = new TierFixture(cluster);

    @AfterEach
    void close() {
        cluster.close();
    }

    private void awaitParity(long step) throws Exception {
        for (int w = 0; w < 4; w++) {
            cluster.jobs(w).erasureParity().encoded("j", step).get(60, TimeUnit.SECONDS);
        }
    }

    /** (2,1,3) on the three survivors, two devices each. */
    private static JsonNode onSurvivors(int lost) {
        var devices = TierFixture.JSON.createArrayNode();
        for (int w = 0; w < 4; w++) {
            if (w != lost) {
                devices.add(TierFixture.JSON.createArrayNode().add(w).add(0));
                devices.add(TierFixture.JSON.createArrayNode().add(w).add(1));
            }
        }
        var c = TierFixture.JSON.createObjectNode().put("tp", 2).put("pp", 1).put("dp", 3);
        c.set("devices", devices);
        return c;
    }

    @Test
    void completedGeneration_parityBlocksLiveAfterTheirGroup() throws Exception {
        job.saveAndSeal(10, K3M1, 5);
        awaitParity(10);
        assertTrue(cluster.store(3).stat(PATHS.parity(10, 0).child("members.json")).isPresent());
        assertTrue(cluster.store(0).stat(PATHS.parity(10, 1).child("members.json")).isPresent());
        for (int w : new int[] {1, 2}) {
            assertTrue(cluster.store(w).stat(PATHS.parities(10)).isEmpty(), "worker " + w + " keeps no parity");
        }
        for (int w = 0; w < 4; w++) {
            assertEquals(List.of(Tiers.MEMORY, Tiers.ERASURE), cluster.jobs(w).generations().tiers().levels("j", 10));
            assertTrue(cluster.store(w).stat(PATHS.replica(10, (w + 1) % 4)).isEmpty(), "no full copies with L3");
        }
    }

    @Test
    void memberOfAGroupLost_isRebuiltFromParity_andTheReconfigurationMatchesDirectSharding() throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, K3M1, 5);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(1), true);
        Reconfiguration c = job.reconfigure(10, onSurvivors(1));
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        assertEquals("memory of worker 3", c.describe().sources().get(3));
        job.assertLoaded(onSurvivors(1), full);
    }

    /**
     * The redistribution does not wait for the whole rebuild: with the parity reads held (the rebuild
     * of worker 1's rank cannot finish), every new shard that reads no piece of rank 1 is staged; the
     * ones reading rank 1 wait for it, and once it is published the change commits byte-exact.
     */
    @Test
    void rebuildHeld_shardsNotReadingTheRebuiltRank_areStagedMeanwhile() throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, K3M1, 7);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(1), true);
        CompletableFuture<Void> release = new CompletableFuture<>();
        cluster.client().holdRangeReadsBelow(PATHS.parities(10), release);
        Reconfiguration c;
        try {
            c = CompletableFuture.supplyAsync(() -> {
                try {
                    return cluster.jobs(0).reconfigure(job.request(10, onSurvivors(1)));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).get(30, TimeUnit.SECONDS); // planning does not wait for the rebuild
            Ptc from = ConfigJson.source(job.model, TierFixture.config(TierFixture.FROM, 1));
            List<Device> placed = new ArrayList<>(from.devices());
            placed.set(1, new Device(0, 2)); // rank 1 rebuilt on worker 0, on a device of its own
            Ptc to = ConfigJson.target(job.model, onSurvivors(1));
            Ptc around = new Ptc(from.model(), from.config(), from.layout(), from.stages(), placed);
            List<ShardPlan> early = new ArrayList<>();
            List<ShardPlan> late = new ArrayList<>();
            List<ShardPlan> shards = new ArrayList<>(); // as each daemon plans its own part
            for (int w : to.devices().stream().map(Device::worker).distinct().toList()) {
                shards.addAll(LocalPlanner.planFor(around, to, w).shards());
            }
            for (ShardPlan s : shards) {
                (s.pieces().stream().anyMatch(p -> p.sourceRank() == 1) ? late : early).add(s);
            }
            assertTrue(!early.isEmpty() && !late.isEmpty(), early.size() + " early, " + late.size() + " late");
            JobLayout staged = new JobLayout("j");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            List<ShardPlan> missing = early;
            while (!missing.isEmpty() && System.nanoTime() < deadline) {
                missing = early.stream().filter(s -> cluster.store(to.device(s.destRank()).worker())
                        .stat(staged.staged(c.id(), s.destRank(), s.key())).isEmpty()).toList();
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L); // polling the parts' staged shards
            }
            assertEquals(List.of(), missing.stream().map(s -> s.destRank() + "/" + s.key()).toList(),
                    "staged while rank 1 is rebuilt");
            assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isEmpty(), "the rebuild is still held");
            for (ShardPlan s : late) {
                assertTrue(cluster.store(to.device(s.destRank()).worker())
                        .stat(staged.staged(c.id(), s.destRank(), s.key())).isEmpty(), "waits for rank 1: " + s.key());
            }
            assertEquals(Reconfiguration.State.EXECUTING, c.state());
        } finally {
            release.complete(null);
        }
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(1), full);
    }

    /**
     * A rebuild that fails after the redistribution started (its parity block gone when read) aborts
     * the change: every part is dropped, nothing is loaded, and no rebuilt rank is published.
     */
    @Test
    void rebuildFailingMidway_abortsTheChange_withNothingLoaded() throws Exception {
        job.saveAndSeal(10, K3M1, 8);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(1), true);
        CompletableFuture<Void> release = new CompletableFuture<>();
        cluster.client().holdRangeReadsBelow(PATHS.parities(10), release);
        Reconfiguration c = cluster.jobs(0).reconfigure(job.request(10, onSurvivors(1)));
        cluster.store(3).delete(PATHS.parity(10, 0).child("0")); // the block the rebuild reads
        release.complete(null);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.ABORTED, c.state());
        assertTrue(c.error().contains("rebuilding from parity failed"), c.error());
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isEmpty(), "nothing of rank 1 published");
        for (int w : new int[] {0, 2, 3}) {
            assertTrue(cluster.store(w).stat(PATHS.load()).isEmpty(), "worker " + w + " loaded nothing");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30); // a part drops its staging as it ends
            while (cluster.store(w).stat(PATHS.staging(c.id())).isPresent() && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L); // polling the aborted part's cleanup
            }
            assertTrue(cluster.store(w).stat(PATHS.staging(c.id())).isEmpty(), "worker " + w + " keeps no staging");
        }
    }

    /**
     * A rebuild asked for again while one of the same ranks runs (its change aborted, the recovery
     * retried) is the same rebuild: never two writers of one rank's replica tree. Once it has ended,
     * a new one starts.
     */
    @Test
    void rebuildAskedAgainWhileRunning_isShared_notStartedTwice() throws Exception {
        job.saveAndSeal(10, K3M1, 9);
        awaitParity(10);
        java.util.concurrent.ExecutorService async = java.util.concurrent.Executors.newCachedThreadPool();
        CompletableFuture<Void> release = new CompletableFuture<>();
        cluster.client().holdRangeReadsBelow(PATHS.parities(10), release);
        try {
            ErasureRebuild rebuild = new ErasureRebuild(cluster.store(0), cluster.jobs(0).generations(), cluster.client(),
                    cluster.client());
            ErasureRebuild.Pending first = rebuild.start("j", 10, 1, java.util.Set.of(1), cluster.daemons(), async,
                    RebuildFallback.NONE);
            ErasureRebuild.Pending again = rebuild.start("j", 10, 1, java.util.Set.of(1), cluster.daemons(), async,
                    RebuildFallback.NONE);
            assertTrue(first == again, "a second rebuild of rank 1 was started beside the first");
            release.complete(null);
            assertEquals(ErasureRebuild.PARITY, first.ranks().get(1).get(60, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            ErasureRebuild.Pending later = first;
            while (later == first && System.nanoTime() < deadline) { // the ended rebuild leaves the in-flight table
                later = rebuild.start("j", 10, 1, java.util.Set.of(1), cluster.daemons(), async,
                        RebuildFallback.NONE);
            }
            assertTrue(later != first, "a rebuild after the first ended starts anew");
            assertEquals(ErasureRebuild.PARITY, later.ranks().get(1).get(60, TimeUnit.SECONDS));
        } finally {
            release.complete(null);
            async.shutdown();
            assertTrue(async.awaitTermination(60, TimeUnit.SECONDS));
        }
    }

    /**
     * A rebuild first asked for without a fallback (a dry plan's) and shared by a recovery that has
     * one: when it then fails, the recovery's fallback is asked for the ranks.
     */
    @Test
    void sharedRebuildFailing_usesTheFallbackOfTheAskerThatHasOne() throws Exception {
        job.saveAndSeal(10, K3M1, 10);
        awaitParity(10);
        java.util.concurrent.ExecutorService async = java.util.concurrent.Executors.newCachedThreadPool();
        CompletableFuture<Void> release = new CompletableFuture<>();
        // every read of the rebuild waits until both askers share it (the streaming rebuild reads the members'
        // blocks beside the parity), then rank 2's fail: mid-decode
        cluster.client().holdRangeReadsBelow(PATHS.root(), release);
        cluster.client().failRangeReadsBelow(PATHS.generation(10).child("2"));
        List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        try {
            ErasureRebuild rebuild = new ErasureRebuild(cluster.store(0), cluster.jobs(0).generations(), cluster.client(),
                    cluster.client());
            ErasureRebuild.Pending first = rebuild.start("j", 10, 1, java.util.Set.of(1), cluster.daemons(), async,
                    RebuildFallback.NONE);
            ErasureRebuild.Pending shared = rebuild.start("j", 10, 1, java.util.Set.of(1), cluster.daemons(), async,
                    (worker, ranks) -> asked.add(worker + " " + ranks) && false);
            assertTrue(first == shared);
            release.complete(null);
            var e = org.junit.jupiter.api.Assertions.assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> first.ranks().get(1).get(60, TimeUnit.SECONDS));
            assertEquals(List.of("1 [1]"), asked);
            assertTrue(e.getCause().getMessage().contains("(injected); nor read from the durable copy of worker 1"),
                    e.getCause().getMessage());
        } finally {
            release.complete(null);
            async.shutdown();
            assertTrue(async.awaitTermination(60, TimeUnit.SECONDS));
        }
    }

    @Test
    void aGroupOfOneLost_isRebuiltFromItsParity() throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, K3M1, 6);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(3), true);
        Reconfiguration c = job.reconfigure(10, onSurvivors(3));
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("rebuilt from parity on worker 0 (worker 3 lost)", c.describe().sources().get(3));
        job.assertLoaded(onSurvivors(3), full);
    }

    @Test
    void twoRanksPerWorker_bothRebuilt_andReportedAsRebuilt() throws Exception {
        try (FakeCluster four = new FakeCluster(4)) {
            TierFixture two = new TierFixture(four, 4, io.tenplex.ptc.ParallelConfig.of(2, 1, 4), 2);
            Map<String, byte[]> full = two.saveAndSeal(10, K3M1, 7);
            for (int w = 0; w < 4; w++) {
                four.jobs(w).erasureParity().encoded("j", 10).get(60, TimeUnit.SECONDS);
            }
            four.client().setUnreachable(four.address(1), true);
            Reconfiguration c = two.reconfigure(10, onSurvivors(1));
            assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
            for (int rank : new int[] {2, 3}) {
                assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(rank));
            }
            two.assertLoaded(onSurvivors(1), full);
        }
    }

    @Test
    void twoParityBlocks_twoMembersOfAGroupLost_bothRebuilt() throws Exception {
        try (FakeCluster five = new FakeCluster(5)) {
            TierFixture job5 = new TierFixture(five, 5, io.tenplex.ptc.ParallelConfig.of(1, 1, 5), 1);
            Map<String, byte[]> full = job5.saveAndSeal(10, new Tiers.Settings(0, 3, 2, 0), 8);
            for (int w = 0; w < 5; w++) {
                five.jobs(w).erasureParity().encoded("j", 10).get(60, TimeUnit.SECONDS);
            }
            assertTrue(five.store(3).stat(PATHS.parity(10, 0).child("0")).isPresent());
            assertTrue(five.store(4).stat(PATHS.parity(10, 0).child("1")).isPresent());
            five.client().setUnreachable(five.address(1), true);
            five.client().setUnreachable(five.address(2), true);
            var to = TierFixture.JSON.createObjectNode().put("tp", 1).put("pp", 1).put("dp", 3);
            to.set("devices", TierFixture.JSON.readTree("[[0, 0], [3, 0], [4, 0]]"));
            Reconfiguration c = job5.reconfigure(10, to);
            assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
            assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(1));
            assertEquals("rebuilt from parity on worker 0 (worker 2 lost)", c.describe().sources().get(2));
            job5.assertLoaded(to, full);
        }
    }

    @Test
    void twoMembersOfOneGroupLost_isRefusedWithTheReason() throws Exception {
        job.saveAndSeal(10, K3M1, 5);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(1), true);
        cluster.client().setUnreachable(cluster.address(2), true);
        var to = TierFixture.JSON.createObjectNode().put("tp", 2).put("pp", 1).put("dp", 1)
                .put("devicesPerWorker", 2).put("firstWorker", 0);
        Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> job.reconfigure(10, to));
        assertTrue(e.getMessage().contains("only 1 of its parity blocks survive"), e.getMessage());
    }
}
