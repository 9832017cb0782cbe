package io.tenplex.jobs.tiers;

import static io.tenplex.jobs.tiers.TierFixture.PATHS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * L3 with L4 behind it: four simulated daemons, one rank each, groups of 3 with one parity block
 * (group {0, 1, 2}, parity on worker 3) and every worker flushing into {@code root/worker-<w>}.
 * Worker 1 is lost and its rank is rebuilt on the coordinator (worker 0) while the redistribution
 * runs; when the rebuild fails once under way, rank 1 is read from worker 1's durable directory.
 */
class ParityFallbackTest {
    private static final Tiers.Settings K3M1_L4 = new Tiers.Settings(0, 3, 1, 2);

    @TempDir
    Path root;
    private final FakeCluster cluster = new FakeCluster(4);
    private final TierFixture job = new TierFixture(cluster);

    @BeforeEach
    void wire() {
        job.flushEveryWorkerInto(root);
    }

    @AfterEach
    void close() {
        cluster.close(); // fails if a restore or a rebuild leaked memory
    }

    /** Saves and seals generation 10, and waits until its parity and every durable copy are in place. */
    private Map<String, byte[]> saved(long seed) throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, K3M1_L4, seed);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (int w = 0; w < 4; w++) {
            cluster.jobs(w).erasureParity().encoded("j", 10).get(60, TimeUnit.SECONDS);
            while (!cluster.jobs(w).generations().tiers().levels("j", 10).contains(Tiers.DURABLE)
                    && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L); // polling the flush's level
            }
            assertTrue(cluster.jobs(w).generations().tiers().levels("j", 10).contains(Tiers.DURABLE),
                    "worker " + w + ": " + cluster.jobs(w).generations().tiers().levels("j", 10));
        }
        return full;
    }

    /** (2,1,3) on the three survivors of worker 1, two devices each. */
    private static JsonNode onSurvivors() {
        var devices = TierFixture.JSON.createArrayNode();
        for (int w : new int[] {0, 2, 3}) {
            devices.add(TierFixture.JSON.createArrayNode().add(w).add(0));
            devices.add(TierFixture.JSON.createArrayNode().add(w).add(1));
        }
        var c = TierFixture.JSON.createObjectNode().put("tp", 2).put("pp", 1).put("dp", 3);
        c.set("devices", devices);
        return c;
    }

    /**
     * Starts the change with the rebuild's reads held (the redistribution starts first): its parity
     * blocks and its members' blocks, read side by side, so that a member's injected failure cannot end
     * the rebuild before the change is planned. Then lets the rebuild go on, and waits for the change to end.
     */
    private Reconfiguration recoverWithRebuildHeld() throws Exception {
        cluster.client().setUnreachable(cluster.address(1), true);
        CompletableFuture<Void> release = new CompletableFuture<>();
        cluster.client().holdRangeReadsBelow(List.of(PATHS.parities(10), PATHS.generation(10)), release, 0);
        Reconfiguration c;
        try {
            c = cluster.jobs(0).reconfigure(job.request(10, onSurvivors()));
        } finally {
            release.complete(null);
        }
        c.finished().get(60, TimeUnit.SECONDS);
        return c;
    }

    @Test
    void rebuildFailingMidDecode_lostRankIsReadFromItsDurableCopy_andTheChangeCommits() throws Exception {
        Map<String, byte[]> full = saved(5);
        // the decode reads the parity block, then the surviving members' blocks: the second member's fail
        cluster.client().failRangeReadsBelow(PATHS.generation(10).child("2"));
        Reconfiguration c = recoverWithRebuildHeld();
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("durable copy read on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isPresent(), "rank 1 published");
        job.assertLoaded(onSurvivors(), full);
    }

    @Test
    void rebuiltBlockNotMatchingItsSeal_afterTheDecode_lostRankIsReadFromItsDurableCopy() throws Exception {
        Map<String, byte[]> full = saved(6);
        flipFirstByte(cluster.store(3), PATHS.parity(10, 0).child("0")); // solves, then fails the CRC32C check
        Reconfiguration c = recoverWithRebuildHeld();
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("durable copy read on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(), full);
    }

    @Test
    void parityGoneBeforeTheRebuildStarts_lostRankIsReadFromItsDurableCopy() throws Exception {
        Map<String, byte[]> full = saved(9);
        cluster.store(3).delete(PATHS.parity(10, 0).child("members.json")); // no complete parity of the group
        Reconfiguration c = recoverWithRebuildHeld();
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("durable copy read on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(), full);
    }

    @Test
    void rebuildSucceeding_saysRebuiltFromParity() throws Exception {
        Map<String, byte[]> full = saved(7);
        Reconfiguration c = recoverWithRebuildHeld();
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(), full);
    }

    /**
     * No level can serve rank 1 (the rebuild fails mid-decode, the durable copy is damaged): the
     * change aborts naming both, nothing is loaded or staged, no tree of rank 1 is published, and
     * generation 10 stays as it was on the survivors.
     */
    @Test
    void rebuildFailing_andDurableCopyDamaged_abortsWithTheGenerationIntact() throws Exception {
        saved(8);
        Map<String, byte[]> before = generationBytes();
        flipMiddleByte(root.resolve("worker-1/jobs/j/10/blocks.pack"));
        cluster.client().failRangeReadsBelow(PATHS.generation(10).child("2"));
        Reconfiguration c = recoverWithRebuildHeld();
        assertEquals(Reconfiguration.State.ABORTED, c.state());
        assertTrue(c.error().contains("rebuilding from parity failed") && c.error().contains("(injected)"), c.error());
        assertTrue(c.error().contains("worker 1"), c.error());
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isEmpty(), "nothing of rank 1 published");
        assertTrue(cluster.store(0).stat(PATHS.replica(10, 1)).isEmpty(), "no tree of rank 1 left");
        for (int w : new int[] {0, 2, 3}) {
            assertTrue(cluster.store(w).stat(PATHS.load()).isEmpty(), "worker " + w + " loaded nothing");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30); // a part drops its staging as it ends
            while (cluster.store(w).stat(PATHS.staging(c.id())).isPresent() && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L); // polling the aborted part's cleanup
            }
            assertTrue(cluster.store(w).stat(PATHS.staging(c.id())).isEmpty(), "worker " + w + " keeps no staging");
        }
        Map<String, byte[]> after = generationBytes();
        assertEquals(before.keySet(), after.keySet());
        before.forEach((path, bytes) -> assertTrue(java.util.Arrays.equals(bytes, after.get(path)), path));
    }

    /** Every file and tensor of generation 10 on the survivors, by worker and path. */
    private Map<String, byte[]> generationBytes() {
        Map<String, byte[]> out = new java.util.TreeMap<>();
        for (int w : new int[] {0, 2, 3}) {
            for (var e : cluster.store(w).walk(PATHS.generation(10), false)) {
                out.put(w + ":" + e.path(), SavedJobs.bytes(cluster.store(w), e.path().toString()));
            }
        }
        return out;
    }

    private static void flipFirstByte(TensorStore store, StorePath path) {
        TensorMeta meta;
        try (DataRef ref = store.openTensor(path)) {
            meta = ref.meta();
        }
        byte[] b = SavedJobs.bytes(store, path.toString());
        b[0] ^= (byte) 0xff;
        Fixtures.putTensor(store, path.toString(), meta, b, true);
    }

    private static void flipMiddleByte(Path file) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            long at = f.length() / 2;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xff);
        }
    }
}
