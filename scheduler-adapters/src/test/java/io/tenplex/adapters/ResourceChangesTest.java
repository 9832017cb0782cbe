package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.OptionalLong;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The resource-change lifecycle over two simulated daemons (the jobs test-jar's in-memory cluster,
 * no sockets): the stop flag goes up on every daemon, the ranks save, the state moves to the new
 * devices, the flag comes down; and a finished job's changes are forgotten.
 */
class ResourceChangesTest {
    private static final JobLayout LAYOUT = new JobLayout("j");
    private final ObjectMapper json = new ObjectMapper();
    private final Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    private final FakeCluster cluster = new FakeCluster(2);

    @AfterEach
    void close() {
        cluster.close();
    }

    private JsonNode from() throws Exception {
        return json.readTree("{\"tp\": 2, \"pp\": 1, \"dp\": 2, \"devicesPerWorker\": 2}");
    }

    /** Every rank saves and seals step 10 on its worker's daemon, as training does when it sees the flag. */
    private Map<String, byte[]> saveAndSeal() throws Exception {
        Ptc ptc = ConfigJson.ptc(model, from(), "from");
        Map<String, byte[]> full = SavedJobs.save(cluster.stores(), LAYOUT, ptc, 3);
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            for (ValueSpec v : model.values()) {
                Fixtures.putFile(cluster.store(ptc.device(rank).worker()), LAYOUT.saved(rank, v.key()).toString(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), false);
            }
        }
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            int w = ptc.device(rank).worker();
            cluster.jobs(w).seal("j", 10, rank, ptc.worldSize(), from(), cluster.daemons()).get(30, TimeUnit.SECONDS);
        }
        return full;
    }

    @Test
    void change_raisesTheFlagEverywhere_movesTheState_andClearsTheFlag() throws Exception {
        Fixtures.putFile(cluster.store(0), LAYOUT.modelSpec().toString(),
                ModelSpecJson.write(model).getBytes(StandardCharsets.UTF_8), false);
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange c = changes.start("j", json.readTree("{\"size\": 4, \"devicesPerWorker\": 2, \"firstWorker\": 0,"
                + " \"config\": {\"tp\": 4, \"pp\": 1, \"dp\": 1}}"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!cluster.jobs(1).stopFlags().shouldStop("j", OptionalLong.empty())) { // training polls it too
            assertTrue(System.nanoTime() < deadline, "the flag is raised on the other daemon too");
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
        assertThrows(StoreException.class, () -> changes.start("j", json.readTree("{\"size\": 2, \"devicesPerWorker\": 2}")));
        Map<String, byte[]> full = saveAndSeal();
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        for (int w = 0; w < 2; w++) {
            assertFalse(cluster.jobs(w).stopFlags().shouldStop("j", OptionalLong.empty()), "worker " + w);
        }
        Ptc to = ConfigJson.ptc(model, json.readTree("{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}"), "to");
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            TensorStore store = cluster.store(to.device(rank).worker());
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(store, "/job/j/load/" + rank + "/" + e.getKey()));
            }
        }
    }

    @Test
    void commitListeners_ofUnusedFeatures_sayNothing_andARealFailureNamesItsFeature() throws Exception {
        Fixtures.putFile(cluster.store(0), LAYOUT.modelSpec().toString(),
                ModelSpecJson.write(model).getBytes(StandardCharsets.UTF_8), false);
        CommitListener unused = (job, config, devices, daemons) -> null;
        CommitListener failing = new CommitListener() {
            @Override
            public String committed(String job, io.tenplex.ptc.ParallelConfig config,
                    java.util.List<io.tenplex.ptc.Device> devices, Map<Integer, java.net.InetSocketAddress> daemons) {
                throw new IllegalStateException("peer 10.0.0.9:20010 refused the move");
            }

            @Override
            public String feature() {
                return "streamed-sample buffers";
            }
        };
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0)).addCommitListener(unused).addCommitListener(failing);
        ResourceChange c = changes.start("j", json.readTree("{\"size\": 4, \"devicesPerWorker\": 2, \"firstWorker\": 0,"
                + " \"config\": {\"tp\": 4, \"pp\": 1, \"dp\": 1}}"));
        saveAndSeal();
        c.finished().get(60, TimeUnit.SECONDS);
        String events = String.valueOf(c.describe());
        assertEquals(ResourceChange.State.DONE, c.state(), events);
        assertTrue(events.contains("the streamed-sample buffers did not follow the commit: peer 10.0.0.9:20010 refused"),
                events);
        assertFalse(events.contains("listener"), events);
    }

    @Test
    void recover_aWorkerLost_movesTheCurrentGenerationOntoTheSurvivor_fromItsPartnerCopy() throws Exception {
        Fixtures.putFile(cluster.store(0), LAYOUT.modelSpec().toString(),
                ModelSpecJson.write(model).getBytes(StandardCharsets.UTF_8), false);
        for (int w = 0; w < 2; w++) {
            cluster.jobs(w).generations().tiers().set("j", new io.tenplex.jobs.generations.Tiers.Settings(1, 0, 0, 0));
        }
        Map<String, byte[]> full = saveAndSeal();
        for (int w = 0; w < 2; w++) {
            cluster.jobs(w).partnerCopies().copied("j", 10).get(30, TimeUnit.SECONDS);
        }
        cluster.client().setUnreachable(cluster.address(1), true);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", json.readTree("{\"devices\": [[0, 0], [0, 1]],"
                + " \"config\": {\"tp\": 2, \"pp\": 1, \"dp\": 1}, \"recover\": true}"));
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        assertEquals("partner copy on worker 0 (worker 1 lost)", c.describe().reconfiguration().sources().get(2));
        Ptc to = ConfigJson.ptc(model, json.readTree("{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}"), "to");
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(cluster.store(0), "/job/j/load/" + rank + "/"
                        + e.getKey()));
            }
        }
    }

    @Test
    void recover_notABoolean_isABadRequest() {
        assertThrows(IllegalArgumentException.class, () -> ResourceChange.Spec.parse(json.readTree(
                "{\"size\": 2, \"devicesPerWorker\": 2, \"recover\": \"yes\"}"), null));
    }

    /** A bad "from" (the configuration the ranks run under) is refused at the post, naming it; a good one is kept. */
    @Test
    void from_isCheckedAsAConfiguration_andKept() throws Exception {
        for (String bad : List.of("\"from\": 3", "\"from\": {\"tp\": 0, \"pp\": 1, \"dp\": 2}",
                "\"from\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, \"devices\": [[0, 0]]}")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResourceChange.Spec.parse(
                    json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, " + bad + "}"), null), bad);
            assertTrue(e.getMessage().contains("from"), e.getMessage());
        }
        ResourceChange.Spec s = ResourceChange.Spec.parse(json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, "
                + "\"from\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, \"devicesPerWorker\": 4}}"), null);
        assertEquals(2, s.from().path("tp").asInt());
        assertEquals(null, ResourceChange.Spec.parse(json.readTree("{\"size\": 2, \"devicesPerWorker\": 2}"), null)
                .from());
    }

    /**
     * A change kept across a restart whose "from" no longer validates (limits changed, a hand-edited
     * file) starts again without it, never dropped for it; "from": null is no "from".
     */
    @Test
    void keptChange_withAFromThatNoLongerValidates_startsAgainWithoutIt(@org.junit.jupiter.api.io.TempDir
            java.nio.file.Path dir) throws Exception {
        ChangeJournal journal = new ChangeJournal(dir);
        journal.started("j", "r7-0a0b0c", json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, \"atStep\": 50, "
                + "\"from\": {\"tp\": 0, \"pp\": 1, \"dp\": 2}}"));
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0)).withJournal(journal);
        ResourceChange c = changes.get("j", "r7-0a0b0c");
        assertTrue(c.describe().events().stream().anyMatch(e -> e.contains("started again after the daemon restarted")),
                String.valueOf(c.describe()));
        assertTrue(cluster.jobs(0).stopFlags().flag("j").isPresent(), "its stop flag is up again");
        changes.cancel("j", c.id()).get(30, TimeUnit.SECONDS);
        assertEquals(null, ResourceChange.Spec.parse(json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, "
                + "\"from\": null}"), null).from());
    }

    @Test
    void finishedChanges_ofAJob_areForgotten() throws Exception {
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange c = changes.start("j", json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, "
                + "\"saveTimeoutSeconds\": 0}"));
        c.finished().get(30, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.FAILED, c.state());
        assertEquals(1, changes.kept("j"));
        changes.forget("j");
        assertEquals(0, changes.kept("j"));
        assertThrows(StoreException.class, () -> changes.get("j", c.id()));
    }

    /**
     * A size-only change of a job saved without a model spec or rules: its generation is under T = 2,
     * so it is refused at the post (400), nothing raised and no change kept; a job with no generation (or
     * a data-parallel one) gets (T,P,D) = (1,1,size) at once, named in its events.
     */
    @Test
    void sizeOnly_withoutADescription_isDataParallel_orRefusedBeforeAnythingIsRaised() throws Exception {
        saveAndSeal(); // generation 10 under (2,1,2), no model stored
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> changes.start("j",
                json.readTree("{\"size\": 2, \"devicesPerWorker\": 2}")));
        assertTrue(e.getMessage().contains("job j has no model spec or partition rules stored and its generation 10 is "
                + "under (T,P,D)=(2,1,2): a change of its size alone cannot be planned"), e.getMessage());
        assertFalse(cluster.jobs(0).stopFlags().flag("j").isPresent(), "nothing raised");
        assertEquals(0, changes.of("j").size(), "no change kept");

        ResourceChange c = changes.start("fresh", json.readTree("{\"size\": 3, \"devicesPerWorker\": 4, "
                + "\"saveTimeoutSeconds\": 0}"));
        c.finished().get(30, TimeUnit.SECONDS);
        assertTrue(c.describe().events().stream().anyMatch(l -> l.contains("no model spec or partition rules stored "
                + "with job fresh: a change of its size alone is a data-parallel change, to (T,P,D)=(1,1,3)")),
                String.valueOf(c.describe()));
    }
}
