package io.tenplex.jobs.tiers;

import static io.tenplex.jobs.tiers.TierFixture.PATHS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import java.util.List;
import java.util.Map;
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
