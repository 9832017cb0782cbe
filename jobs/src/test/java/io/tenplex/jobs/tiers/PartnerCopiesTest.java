package io.tenplex.jobs.tiers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.store.Entry;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * L2 over four simulated daemons (in-memory {@link FakeCluster}): rank {@code r} lives on worker
 * {@code r}; with one partner, worker {@code w} keeps the copy of worker {@code w-1}'s rank.
 */
class PartnerCopiesTest {
    private static final JobLayout PATHS = TierFixture.PATHS;
    private static final ParallelConfig FROM = TierFixture.FROM;
    private final FakeCluster cluster = new FakeCluster(4);
    private final TierFixture job = new TierFixture(cluster);
    private final Model model = job.model;

    @AfterEach
    void close() {
        cluster.close(); // fails if a copy leaked memory
    }

    private static JsonNode config(ParallelConfig c, int perWorker) {
        return TierFixture.config(c, perWorker);
    }

    /** Saves FROM (one rank per worker) and seals it as {@code step} with {@code partners} on every daemon. */
    private Map<String, byte[]> saveAndSeal(long step, int partners, long seed) throws Exception {
        return job.saveAndSeal(step, new Tiers.Settings(partners, 0, 0, 0), seed);
    }

    private void awaitCopies(long step) throws Exception {
        for (int w = 0; w < 4; w++) {
            cluster.jobs(w).partnerCopies().copied("j", step).get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void completedGeneration_eachWorkerHoldsTheCopyOfThePreviousWorkersRank_bitForBit() throws Exception {
        saveAndSeal(10, 1, 5);
        awaitCopies(10);
        for (int w = 0; w < 4; w++) {
            TensorStore store = cluster.store(w);
            int copied = Math.floorMod(w - 1, 4);
            assertTrue(store.stat(PATHS.replicaManifest(10, copied)).isPresent(), "worker " + w + " copies " + copied);
            assertTrue(store.stat(PATHS.replicaManifest(10, w)).isPresent(), "worker " + w + " keeps its own");
            for (int other : new int[] {(w + 1) % 4, (w + 2) % 4}) {
                assertTrue(store.stat(PATHS.replica(10, other)).isEmpty(), "worker " + w + " must not hold rank " + other);
            }
            TensorStore holder = cluster.store(copied);
            StorePath sealed = PATHS.generation(10).child(Integer.toString(copied));
            int entries = 0;
            for (Entry e : holder.walk(sealed, false)) {
                String rel = e.path().toString().substring(sealed.toString().length());
                assertArrayEquals(SavedJobs.bytes(holder, e.path().toString()),
                        SavedJobs.bytes(store, PATHS.replica(10, copied) + rel), rel);
                entries++;
            }
            assertTrue(entries > model.values().size(), "tensors and values copied");
            assertEquals(java.util.List.of(Tiers.MEMORY, Tiers.PARTNERS), cluster.jobs(w).generations().tiers()
                    .levels("j", 10));
        }
    }

    @Test
    void noPartners_nothingIsCopied() throws Exception {
        saveAndSeal(10, 0, 5);
        for (int w = 0; w < 4; w++) {
            assertTrue(cluster.store(w).stat(PATHS.replicas(10)).isEmpty());
            assertEquals(java.util.List.of(Tiers.MEMORY), cluster.jobs(w).generations().tiers().levels("j", 10));
        }
    }

    @Test
    void droppedGeneration_dropsItsCopies() throws Exception {
        saveAndSeal(10, 1, 5);
        awaitCopies(10);
        saveAndSeal(20, 1, 6);
        awaitCopies(20);
        saveAndSeal(30, 1, 7); // keeps 30 and 20: 10 is dropped
        awaitCopies(30);
        for (int w = 0; w < 4; w++) {
            cluster.jobs(w).partnerCopies().dropping("j", 10).get(30, TimeUnit.SECONDS);
            assertTrue(cluster.store(w).stat(PATHS.replicas(20)).isPresent(), "worker " + w);
            assertTrue(cluster.store(w).stat(PATHS.replicas(10)).isEmpty(), "worker " + w);
        }
    }

    @Test
    void workerLost_reconfigureOntoTheThreeSurvivors_readsItsRankFromThePartner_andMatchesDirectSharding()
            throws Exception {
        Map<String, byte[]> full = saveAndSeal(10, 1, 5);
        awaitCopies(10);
        cluster.client().setUnreachable(cluster.address(3), true);
        ParallelConfig to = ParallelConfig.of(2, 1, 3);
        Reconfiguration c = job.reconfigure(10, config(to, 2));
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        Map<Integer, String> sources = c.describe().sources();
        assertEquals("partner copy on worker 0 (worker 3 lost)", sources.get(3));
        assertEquals("memory of worker 1", sources.get(1));
        job.assertLoaded(config(to, 2), full);
    }

    @Test
    void workerLost_twoPartners_itsRanksAreReadFromBothHoldersOfACopy_andMatchDirectSharding() throws Exception {
        TierFixture two = new TierFixture(cluster, 4, ParallelConfig.of(2, 1, 4), 2); // ranks 6 and 7 on worker 3
        Map<String, byte[]> full = two.saveAndSeal(10, new Tiers.Settings(2, 0, 0, 0), 7);
        awaitCopies(10);
        cluster.client().setUnreachable(cluster.address(3), true);
        ParallelConfig to = ParallelConfig.of(2, 1, 3);
        Reconfiguration c = two.reconfigure(10, config(to, 2));
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        Map<Integer, String> sources = c.describe().sources();
        assertEquals("partner copy on worker 0 (worker 3 lost)", sources.get(6));
        assertEquals("partner copy on worker 1 (worker 3 lost)", sources.get(7)); // not both through worker 0
        two.assertLoaded(config(to, 2), full);
    }

    @Test
    void workerLost_newDevicesOnTheLostWorker_isRefused() throws Exception {
        saveAndSeal(10, 1, 5);
        awaitCopies(10);
        cluster.client().setUnreachable(cluster.address(3), true);
        ReconfigureRequest r = new ReconfigureRequest("j", ModelSpecJson.write(model), null, config(FROM, 1),
                OptionalLong.of(10), false, OptionalLong.empty(), cluster.daemons(), -1, OptionalLong.empty(),
                OptionalLong.of(60_000), null);
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> cluster.jobs(0).dryRun(r));
        assertTrue(e.getMessage().contains("worker 3"), e.getMessage());
    }
}
