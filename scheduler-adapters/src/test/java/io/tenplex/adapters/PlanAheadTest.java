package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.Fixtures;
import io.tenplex.transform.ReferenceInterpreter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A resource change plans while the job trains towards its stop step: the plan is made before the
 * ranks save, used when the saved generation has the model and configuration it assumed, and
 * made again when it does not (two simulated daemons, no sockets).
 */
class PlanAheadTest {
    private static final JobLayout LAYOUT = new JobLayout("j");
    private static final String TO = "{\"size\": 4, \"devicesPerWorker\": 2, \"firstWorker\": 0,"
            + " \"config\": {\"tp\": 4, \"pp\": 1, \"dp\": 1}}";
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

    /** Stores {@code m} as the job's model spec (as a save with {@code spec=} does). */
    private void describe(Model m) {
        Fixtures.putFile(cluster.store(0), LAYOUT.modelSpec().toString(),
                ModelSpecJson.write(m).getBytes(StandardCharsets.UTF_8), true);
    }

    /** Every rank saves and seals {@code step} of model {@code m} on its worker's daemon. */
    private Map<String, byte[]> saveAndSeal(Model m, long step, long seed) throws Exception {
        return saveAndSeal(m, from(), step, seed);
    }

    /** As {@link #saveAndSeal(Model, long, long)}, under {@code config}. */
    private Map<String, byte[]> saveAndSeal(Model m, JsonNode config, long step, long seed) throws Exception {
        Ptc ptc = ConfigJson.ptc(m, config, "from");
        for (int w = 0; w < 2 && step > 10; w++) { // the ranks' trees of the save before
            if (cluster.store(w).stat(LAYOUT.source()).isPresent()) {
                cluster.store(w).delete(LAYOUT.source());
            }
        }
        Map<String, byte[]> full = SavedJobs.save(cluster.stores(), LAYOUT, ptc, seed);
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            for (ValueSpec v : m.values()) {
                Fixtures.putFile(cluster.store(ptc.device(rank).worker()), LAYOUT.saved(rank, v.key()).toString(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), true);
            }
        }
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            int w = ptc.device(rank).worker();
            cluster.jobs(w).seal("j", step, rank, ptc.worldSize(), config, cluster.daemons()).get(30, TimeUnit.SECONDS);
        }
        return full;
    }

    /** Waits until an event of the change contains {@code text}; answers its index. */
    private static int awaitEvent(ResourceChange c, String text) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            int i = indexOf(c.describe().events(), text);
            if (i >= 0) {
                return i;
            }
            assertTrue(System.nanoTime() < deadline, "no event with \"" + text + "\": " + c.describe().events());
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
    }

    private static int indexOf(List<String> events, String text) {
        for (int i = 0; i < events.size(); i++) {
            if (events.get(i).contains(text)) {
                return i;
            }
        }
        return -1;
    }

    private void assertMoved(Model m, Map<String, byte[]> full) throws Exception {
        assertLoaded(m, json.readTree("{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}"), full);
    }

    /** Every rank of {@code config} holds its shards of {@code full} in its load tree. */
    private void assertLoaded(Model m, JsonNode config, Map<String, byte[]> full) throws Exception {
        Ptc to = ConfigJson.ptc(m, config, "to");
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(cluster.store(to.device(rank).worker()),
                        "/job/j/load/" + rank + "/" + e.getKey()), "rank " + rank + " " + e.getKey());
            }
        }
    }

    @Test
    void change_isPlannedBeforeTheRanksSave_andThePlanIsUsedWhenTheSaveMatchesIt() throws Exception {
        describe(model);
        saveAndSeal(model, 10, 3);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", json.readTree(TO));
        int planned = awaitEvent(c, "planned ahead");
        assertEquals(ResourceChange.State.STOPPING, c.state(), "planned while the ranks still train");
        assertEquals(-1, indexOf(c.describe().events(), "generation 20 complete"), String.valueOf(c.describe()));
        Map<String, byte[]> full = saveAndSeal(model, 20, 4);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        List<String> events = c.describe().events();
        assertTrue(planned < indexOf(events, "generation 20 complete"), events.toString());
        assertTrue(indexOf(events, "plan made ahead used") > indexOf(events, "generation 20 complete"), events.toString());
        assertEquals(-1, indexOf(events, "re-planned"), events.toString());
        assertMoved(model, full);
    }

    @Test
    void change_whoseSaveDescribesTheModelDifferently_isPlannedAgain_neverWithTheStalePlan() throws Exception {
        describe(model);
        saveAndSeal(model, 10, 3);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", json.readTree(TO));
        awaitEvent(c, "planned ahead");
        Model longer = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 32)); // position embeddings differ
        describe(longer);
        Map<String, byte[]> full = saveAndSeal(longer, 20, 4);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        List<String> events = c.describe().events();
        int replanned = indexOf(events, "re-planned");
        assertTrue(replanned > indexOf(events, "generation 20 complete"), events.toString());
        assertTrue(events.get(replanned).contains("the model differs"), events.get(replanned));
        assertFalse(events.toString().contains("plan made ahead used"), events.toString());
        assertMoved(longer, full);
    }

    @Test
    void secondChange_beforeTheRanksSavedAgain_isPlannedFromTheFirstChangesConfiguration() throws Exception {
        describe(model);
        saveAndSeal(model, 10, 3);
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange first = changes.start("j", json.readTree(TO));
        saveAndSeal(model, 20, 4);
        first.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, first.state(), String.valueOf(first.describe()));
        // the ranks were relaunched under (4,1,1) from generation 20 and have not saved since
        ResourceChange second = changes.start("j", json.readTree("{\"size\": 4, \"devicesPerWorker\": 2,"
                + " \"config\": {\"tp\": 2, \"pp\": 1, \"dp\": 2}}"));
        int planned = awaitEvent(second, "planned ahead");
        assertTrue(second.describe().events().get(planned).contains("configuration of change " + first.id()),
                second.describe().events().get(planned));
        JsonNode running = json.readTree("{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}");
        Map<String, byte[]> full = saveAndSeal(model, running, 30, 5);
        second.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, second.state(), String.valueOf(second.describe()));
        assertTrue(indexOf(second.describe().events(), "plan made ahead used") >= 0, second.describe().events()
                .toString());
        assertLoaded(model, from(), full);
    }

    @Test
    void change_ofAJobWithoutAGeneration_isPlannedAfterTheSave() throws Exception {
        describe(model);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", json.readTree(TO));
        awaitEvent(c, "not planned ahead");
        Map<String, byte[]> full = saveAndSeal(model, 10, 3);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        assertMoved(model, full);
    }

    /**
     * A job without a generation is planned ahead when the change says what the ranks run under
     * ("from", as {@code tenplex run} sends it), and the plan is used when their save matches.
     */
    @Test
    void change_ofAJobWithoutAGeneration_givenFrom_isPlannedAhead_andThePlanUsed() throws Exception {
        describe(model);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", withFrom(from()));
        int planned = awaitEvent(c, "planned ahead");
        assertTrue(c.describe().events().get(planned).contains("\"from\""), c.describe().events().get(planned));
        assertEquals(-1, indexOf(c.describe().events(), "not planned ahead"), String.valueOf(c.describe()));
        Map<String, byte[]> full = saveAndSeal(model, 10, 3);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        assertTrue(indexOf(c.describe().events(), "plan made ahead used") >= 0, c.describe().events().toString());
        assertMoved(model, full);
    }

    /** A "from" the ranks do not run under costs only the plan: the change plans again from their save. */
    @Test
    void change_givenAWrongFrom_isPlannedAgainFromTheSave_andMovesTheSavedBytes() throws Exception {
        describe(model);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", withFrom(json.readTree(
                "{\"tp\": 1, \"pp\": 1, \"dp\": 4, \"devicesPerWorker\": 2}")));
        awaitEvent(c, "planned ahead");
        Map<String, byte[]> full = saveAndSeal(model, 10, 3); // under (2,1,2)
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        List<String> events = c.describe().events();
        assertTrue(indexOf(events, "re-planned") >= 0, events.toString());
        assertFalse(events.toString().contains("plan made ahead used"), events.toString());
        assertMoved(model, full);
    }

    /**
     * "from" is what the ranks run under as their launcher knows it: it is taken over the generation's
     * configuration (here the ranks were relaunched under (4,1,1) without saving since generation 10).
     */
    @Test
    void change_givenFrom_isPlannedFromIt_overTheGenerationsConfiguration() throws Exception {
        describe(model);
        saveAndSeal(model, 10, 3); // under (2,1,2)
        JsonNode running = json.readTree("{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}");
        com.fasterxml.jackson.databind.node.ObjectNode b = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(
                "{\"size\": 4, \"devicesPerWorker\": 2, \"config\": {\"tp\": 2, \"pp\": 1, \"dp\": 2}}");
        b.set("from", running);
        ResourceChange c = new ResourceChanges(cluster.jobs(0)).start("j", b);
        int planned = awaitEvent(c, "planned ahead");
        assertTrue(c.describe().events().get(planned).contains("(T,P,D)=(4,1,1) -> (T,P,D)=(2,1,2)"),
                c.describe().events().get(planned));
        Map<String, byte[]> full = saveAndSeal(model, running, 20, 4);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(ResourceChange.State.DONE, c.state(), String.valueOf(c.describe()));
        assertTrue(indexOf(c.describe().events(), "plan made ahead used") >= 0, c.describe().events().toString());
        assertLoaded(model, from(), full);
    }

    private JsonNode withFrom(JsonNode from) throws Exception {
        com.fasterxml.jackson.databind.node.ObjectNode b = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(TO);
        b.set("from", from);
        return b;
    }
}
