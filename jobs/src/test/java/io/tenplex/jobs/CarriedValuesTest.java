package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a described model does not describe, carried through a change of T and P over the in-memory
 * cluster: values equal across the tensor and pipeline ranks of a data-parallel index are carried
 * (each new rank its own index's, so per-rank RNG state stays per rank); values that differ between
 * them are refused, naming the path and the ranks, before anything is staged or loaded.
 */
class CarriedValuesTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final JobLayout PATHS = new JobLayout("j");
    private static final ParallelConfig A = ParallelConfig.of(2, 2, 2);
    private static final ParallelConfig B = ParallelConfig.of(4, 1, 2);
    private static final String SCHEDULER = "scheduler/last_epoch.int";
    private final ObjectMapper json = new ObjectMapper();
    private final Model model = MegatronLayout.model(GPT);
    private final FakeCluster cluster = new FakeCluster(3);

    @AfterEach
    void close() {
        cluster.close();
    }

    private JsonNode config(ParallelConfig c, int firstWorker) {
        return json.createObjectNode().put("tp", c.tp()).put("pp", c.pp()).put("dp", c.dp()).put("devicesPerWorker", 4)
                .put("firstWorker", firstWorker);
    }

    /** Saves the model under A with an undeclared scheduler value per rank. */
    private void save(IntFunction<String> scheduler) {
        Ptc from = ConfigJson.ptc(model, config(A, 0), "test");
        SavedJobs.save(cluster.stores(), PATHS, from, 5);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            TensorStore store = cluster.store(from.device(rank).worker());
            for (var v : model.values()) {
                Fixtures.putFile(store, PATHS.saved(rank, v.key()).toString(), "v".getBytes(StandardCharsets.UTF_8),
                        false);
            }
            Fixtures.putFile(store, PATHS.savedRank(rank) + "/" + SCHEDULER,
                    scheduler.apply(rank).getBytes(StandardCharsets.UTF_8), false);
        }
    }

    private Reconfiguration reconfigure() throws Exception {
        ReconfigureRequest r = new ReconfigureRequest("j", ModelSpecJson.write(model), config(A, 0), config(B, 1),
                OptionalLong.empty(), true, OptionalLong.of(120), cluster.daemons(), -1, OptionalLong.empty(),
                OptionalLong.of(60_000), null);
        Reconfiguration c = cluster.jobs(0).reconfigure(r);
        c.finished().get(60, TimeUnit.SECONDS);
        return c;
    }

    @Test
    void tpAndPpChange_valuesEqualPerDataIndex_areCarriedToEveryNewRankOfThatIndex() throws Exception {
        save(rank -> "epoch of data index " + RankLayout.MEGATRON.coord(rank, A).dp());
        Reconfiguration r = reconfigure();
        assertEquals(Reconfiguration.State.COMMITTED, r.state(), String.valueOf(r.describe()));
        Ptc to = ConfigJson.ptc(model, config(B, 1), "test");
        for (int rank = 0; rank < to.worldSize(); rank++) {
            TensorStore store = cluster.store(to.device(rank).worker());
            String got = new String(SavedJobs.bytes(store, "/job/j/load/" + rank + "/" + SCHEDULER),
                    StandardCharsets.UTF_8);
            assertEquals("epoch of data index " + RankLayout.MEGATRON.coord(rank, B).dp(), got, "new rank " + rank);
        }
    }

    @Test
    void tpAndPpChange_aValueThatDiffersBetweenTensorRanks_isRefusedNamingItAndTheRanks_nothingLoaded()
            throws Exception {
        save(rank -> rank == 1 ? "epoch 7" : "epoch 8"); // rank 1: tensor rank 1 of data index 0
        Reconfiguration r = reconfigure();
        assertEquals(Reconfiguration.State.ABORTED, r.state());
        assertTrue(r.error().contains("value 'scheduler.last_epoch' (saved as " + SCHEDULER + ") differs between ranks 0 "
                + "and 1 (data-parallel index 0)"),
                r.error());
        assertTrue(r.error().contains("declare it in the spec's values"), r.error());
        assertEquals(0, cluster.client().valueReads(), "compared by digest where saved: no value read whole");
        for (int w = 0; w < 3; w++) {
            assertTrue(cluster.store(w).stat(StorePath.parse("/job/j/load")).isEmpty(), "worker " + w);
        }
        assertEquals(0, cluster.jobs(1).kept("j") + cluster.jobs(2).kept("j")); // no part was ever sent
    }
}
