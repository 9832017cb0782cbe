package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Planner;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The segments a change planned ahead takes on a worker: one per saving rank, then the move's. */
class SegmentsAheadTest {
    private final ObjectMapper json = new ObjectMapper();
    private final Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));

    private Ptc ptc(String config, String which) throws Exception {
        return ptc(model, config, which);
    }

    private Ptc ptc(Model m, String config, String which) throws Exception {
        return ConfigJson.ptc(m, json.readTree(config), which);
    }

    @Test
    void replicasSaveOnce_andTheSavesTogetherHoldTheWholeModel_asTheMoveToOneRankDoes() throws Exception {
        Ptc from = ptc("{\"tp\": 2, \"pp\": 1, \"dp\": 2, \"devicesPerWorker\": 4}", "from");
        Ptc to = ptc("{\"tp\": 1, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 4}", "to");
        List<Long> sizes = SegmentsAhead.sizes(Planner.plan(from, to), from, 0, true);
        assertEquals(3, sizes.size(), "two saving ranks (their replicas do not save) and the move: " + sizes);
        assertEquals(List.of(sizes.get(2)), SegmentsAhead.sizes(Planner.plan(from, to), from, 0, false),
                "a stop at once: the move's alone");
        long move = sizes.get(2);
        long saves = sizes.get(0) + sizes.get(1);
        assertTrue(saves >= move + 2 * SegmentsAhead.SAVE_SLACK, saves + " against " + move);
        assertTrue(saves <= move + 2 * Math.max(SegmentsAhead.SAVE_SLACK, move / 128) + 2L * 4096 * model.tensors().size(),
                saves + " against " + move);
    }

    /**
     * (1,1,4) -> (4,1,1) of a model whose position embeddings (4096 x 64, not split by tp) are most of
     * it: the ahead plan keeps every rank's replicated tensors in place, but only rank 0 saved them (its
     * replicas seal empty), so the move assembles them once more, for ranks 1-3 together.
     */
    @Test
    void shardsKeptFromAReplicaThatDoesNotSave_areCountedInTheMove_once() throws Exception {
        Model longSequences = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 4096));
        Ptc from = ptc(longSequences, "{\"tp\": 1, \"pp\": 1, \"dp\": 4, \"devicesPerWorker\": 4}", "from");
        Ptc to = ptc(longSequences, "{\"tp\": 4, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 4}", "to");
        List<Long> sizes = SegmentsAhead.sizes(Planner.plan(from, to), from, 0, true);
        assertEquals(2, sizes.size(), "rank 0 saves, then the move: " + sizes);
        java.util.Set<String> keptByRank0 = new java.util.HashSet<>();
        from.shards(0).forEach(s -> keptByRank0.add(s.key() + " " + s.region()));
        java.util.Map<String, Long> assembled = new java.util.HashMap<>(); // by content: replicas share one copy
        for (int rank = 0; rank < 4; rank++) {
            for (Ptc.Shard s : to.shards(rank)) {
                if (rank > 0 || !keptByRank0.contains(s.key() + " " + s.region())) {
                    assembled.put(s.key() + " " + s.region(), s.bytes());
                }
            }
        }
        long want = assembled.values().stream().mapToLong(Long::longValue).sum();
        long move = sizes.get(1);
        assertTrue(move >= want && move <= want + 4096L * assembled.size(), move + " against " + want);
    }

    @Test
    void aWorkerWithoutRanksOrShards_takesNothing_andNoPlanTakesNothing() throws Exception {
        Ptc from = ptc("{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}", "from");
        Ptc to = ptc("{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}", "to");
        assertEquals(List.of(), SegmentsAhead.sizes(Planner.plan(from, to), from, 1, true));
        assertEquals(List.of(), SegmentsAhead.sizes(null, from, 0, true));
    }
}
