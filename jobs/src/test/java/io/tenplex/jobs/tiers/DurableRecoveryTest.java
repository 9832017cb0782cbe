package io.tenplex.jobs.tiers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.store.Entry;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * L4 in a recovery: four simulated daemons, two ranks each ((2,1,4): worker 3 holds ranks 6 and 7),
 * each flushing into {@code root/worker-<w>}; worker 3 is lost and worker 0 reads its directory. The
 * lost worker's manifests are on shared storage, so they are treated as untrusted input.
 */
class DurableRecoveryTest {
    private static final Tiers.Settings L4 = new Tiers.Settings(0, 0, 0, 2);
    private static final JsonNode TO = TierFixture.config(ParallelConfig.of(2, 1, 3), 2);

    @TempDir
    Path root;
    private final FakeCluster cluster = new FakeCluster(4);
    private final TierFixture job = new TierFixture(cluster, 4, ParallelConfig.of(2, 1, 4), 2);

    @BeforeEach
    void wire() {
        job.flushEveryWorkerInto(root);
    }

    @AfterEach
    void close() {
        cluster.close(); // fails if a restore leaked memory
    }

    private Path manifest(long step) {
        return root.resolve("worker-3/jobs/j/" + step + "/manifest.json");
    }

    private ObjectNode readManifest(long step) throws Exception {
        return (ObjectNode) TierFixture.JSON.readTree(manifest(step).toFile());
    }

    private void writeManifest(long step, JsonNode m) throws Exception {
        Files.write(manifest(step), TierFixture.JSON.writeValueAsBytes(m));
    }

    private Map<String, byte[]> rankTree(TensorStore store, StorePath dir) {
        Map<String, byte[]> out = new TreeMap<>();
        for (Entry e : store.walk(dir, false)) {
            out.put(e.path().toString(), SavedJobs.bytes(store, e.path().toString()));
        }
        return out;
    }

    @Test
    void workerLost_itsRanksAreReadFromItsDirectory_andMatchDirectSharding() throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, L4, 5);
        cluster.client().setUnreachable(cluster.address(3), true);
        Reconfiguration c = job.reconfigure(10, TO);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("durable copy read on worker 0 (worker 3 lost)", c.describe().sources().get(7));
        job.assertLoaded(TO, full);
    }

    @Test
    void lostWorkersManifestListsAnotherWorkersRank_survivorsCopyIsNotOverwritten() throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, L4, 5);
        ObjectNode m = readManifest(10);
        ((ObjectNode) m.get("ranks")).set("0", m.get("ranks").get("7")); // rank 7's entries claimed as rank 0's
        writeManifest(10, m);
        StorePath rank0 = TierFixture.PATHS.generation(10).child("0");
        Map<String, byte[]> before = rankTree(cluster.store(0), rank0);
        cluster.client().setUnreachable(cluster.address(3), true);
        Reconfiguration c = job.reconfigure(10, TO);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        Map<String, byte[]> after = rankTree(cluster.store(0), rank0);
        assertEquals(before.keySet(), after.keySet());
        before.forEach((path, bytes) -> assertArrayEquals(bytes, after.get(path), path));
        job.assertLoaded(TO, full);
    }

    @Test
    void lostWorkersManifestLacksOneOfItsRanks_isRefusedWhenPlanning() throws Exception {
        job.saveAndSeal(10, L4, 5);
        ObjectNode m = readManifest(10);
        ((ObjectNode) m.get("ranks")).remove("7");
        writeManifest(10, m);
        cluster.client().setUnreachable(cluster.address(3), true);
        var e = assertThrows(IllegalArgumentException.class, () -> job.reconfigure(10, TO));
        assertTrue(e.getMessage().contains("ranks [6, 7]"), e.getMessage());
    }

    @Test
    void lostWorkersManifestOfAnotherConfiguration_isNotRead() throws Exception {
        job.saveAndSeal(10, L4, 5);
        ObjectNode m = readManifest(10);
        ((ObjectNode) m.get("config")).put("dp", 2); // a stale generation of another run of the job
        writeManifest(10, m);
        cluster.client().setUnreachable(cluster.address(3), true);
        var e = assertThrows(IllegalArgumentException.class, () -> job.reconfigure(10, TO));
        assertTrue(e.getMessage().contains("ranks [6, 7]"), e.getMessage());
    }

    @Test
    void lostWorkersCurrentGenerationDamaged_theOlderOneIsRecovered() throws Exception {
        Map<String, byte[]> tenth = job.saveAndSeal(10, L4, 5);
        job.saveAndSeal(20, L4, 6);
        Path pack = root.resolve("worker-3/jobs/j/20/blocks.pack");
        try (RandomAccessFile f = new RandomAccessFile(pack.toFile(), "rw")) {
            long at = f.length() / 2;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xff);
        }
        cluster.client().setUnreachable(cluster.address(3), true);
        Reconfiguration c = job.reconfigure(20, TO);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals(10, c.step());
        job.assertLoaded(TO, tenth);
    }

    @Test
    void dryRun_saysTheDurableCopyWouldBeRead_andReadsNothing() throws Exception {
        job.saveAndSeal(10, L4, 5);
        cluster.client().setUnreachable(cluster.address(3), true);
        ReconfigureRequest r = new ReconfigureRequest("j", ModelSpecJson.write(job.model), null, TO,
                OptionalLong.of(10), false, OptionalLong.empty(), cluster.daemons(), -1, OptionalLong.empty(),
                OptionalLong.of(60_000), null);
        Jobs.DryRun d = cluster.jobs(0).dryRun(r);
        assertEquals("durable copy read on worker 0 (worker 3 lost)", d.sources().get(6));
        for (int rank : new int[] {6, 7}) {
            assertTrue(cluster.store(0).stat(TierFixture.PATHS.generation(10).child(Integer.toString(rank))).isEmpty(),
                    "rank " + rank + " was read into worker 0's store by a dry run");
        }
    }
}
