package io.tenplex.jobs.tiers;

import static io.tenplex.jobs.tiers.TierFixture.PATHS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.Reconfiguration;
import io.tenplex.jobs.Tiers;
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
    void twoMembersOfOneGroupLost_isRefusedWithTheReason() throws Exception {
        job.saveAndSeal(10, K3M1, 5);
        awaitParity(10);
        cluster.client().setUnreachable(cluster.address(1), true);
        cluster.client().setUnreachable(cluster.address(2), true);
        var to = TierFixture.JSON.createObjectNode().put("tp", 2).put("pp", 1).put("dp", 1)
                .put("devicesPerWorker", 2).put("firstWorker", 0);
        Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> job.reconfigure(10, to));
        assertTrue(e.getMessage().contains("one is rebuilt per group"), e.getMessage());
    }
}
