package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Real Megatron-LM checkpoint structures (GPT "large": 24 layers, hidden 1536, 16 heads, fp16,
 * recorded under six (T, P, D)): the model inferred from any one configuration predicts the recorded
 * shard shapes of every configuration, padded vocabulary and optimizer state included, and agrees
 * with the model MegatronLayout builds from the same numbers.
 */
class MegatronStructuresTest {
    private static final String[] CONFIGS = {"pp01/mp01/dp02", "pp01/mp02/dp01", "pp01/mp04/dp01", "pp02/mp01/dp01",
        "pp02/mp02/dp01", "pp02/mp04/dp01"};
    private static final ObjectMapper JSON = new ObjectMapper();

    record Recorded(ParallelConfig config, Map<Integer, JsonNode> byRank) {}

    static Recorded load(String dir) throws IOException {
        String[] parts = dir.split("/");
        int pp = Integer.parseInt(parts[0].substring(2));
        int tp = Integer.parseInt(parts[1].substring(2));
        int dp = Integer.parseInt(parts[2].substring(2));
        ParallelConfig c = ParallelConfig.of(tp, pp, dp);
        JsonNode rankMap = read(dir + "/rank_map.json");
        Map<Integer, JsonNode> byRank = new LinkedHashMap<>();
        for (var it = rankMap.fields(); it.hasNext(); ) {
            var e = it.next();
            int rank = Integer.parseInt(e.getKey());
            if (e.getValue().get("dp_rank").asInt() != 0) {
                continue; // Megatron saves from data-parallel rank 0 only
            }
            int t = e.getValue().get("mp_rank").asInt();
            int p = e.getValue().get("pp_rank").asInt();
            assertEquals(rank, RankLayout.MEGATRON.rank(new RankLayout.Coord(t, e.getValue().get("dp_rank").asInt(), p), c));
            String file = String.format("%s/rank%02d/mp_rank_%02d%s.json", dir, rank, t, pp > 1 ? String.format("_%03d", p) : "");
            byRank.put(rank, read(file));
        }
        return new Recorded(c, byRank);
    }

    private static JsonNode read(String path) throws IOException {
        try (InputStream in = MegatronStructuresTest.class.getResourceAsStream("/megatron-structures/gpt/large/" + path)) {
            if (in == null) {
                throw new IOException("missing test resource " + path);
            }
            return JSON.readTree(in);
        }
    }

    @Test
    void inferredModel_predictsEveryRecordedConfiguration() throws IOException {
        List<Recorded> all = new ArrayList<>();
        for (String c : CONFIGS) {
            all.add(load(c));
        }
        for (Recorded a : all) {
            Model inferred = MegatronStructures.infer(a.byRank(), a.config(), RankLayout.MEGATRON, 16, 50257, 128,
                    DType.F16);
            assertEquals(24, inferred.layers());
            for (Recorded b : all) {
                Model m = b.config().pp() == a.config().pp() ? inferred
                        : MegatronStructures.infer(b.byRank(), b.config(), RankLayout.MEGATRON, 16, 50257, 128, DType.F16);
                assertSameTensors(inferred, m, a.config() + " vs " + b.config());
                Ptc ptc = Ptc.packed(m, b.config(), 8);
                for (Map.Entry<Integer, JsonNode> r : b.byRank().entrySet()) {
                    Map<String, Shape> recorded = MegatronStructures.shardShapes(r.getValue());
                    Map<String, Shape> predicted = new LinkedHashMap<>();
                    for (Ptc.Shard s : ptc.shards(r.getKey())) {
                        predicted.put(s.key(), s.shape());
                    }
                    assertEquals(recorded, predicted, "from " + a.config() + ": rank " + r.getKey() + " of " + b.config());
                }
            }
        }
    }

    /** Same tensors apart from the tied head that only pipelines have. */
    private static void assertSameTensors(Model a, Model b, String what) {
        for (TensorSpec t : b.tensors()) {
            if (!a.has(t.name())) {
                assertTrue(t.name().contains(MegatronLayout.TIED_HEAD), what + ": " + t.name());
                continue;
            }
            TensorSpec s = a.tensor(t.name());
            assertEquals(s.shape(), t.shape(), what + ": " + t.name());
            assertEquals(s.partition(), t.partition(), what + ": " + t.name());
        }
    }

    @Test
    void inferredModel_agreesWithMegatronLayout() throws IOException {
        Recorded r = load("pp02/mp02/dp01");
        Model inferred = MegatronStructures.infer(r.byRank(), r.config(), RankLayout.MEGATRON, 16, 50257, 128, DType.F16);
        Model built = MegatronLayout.model(new MegatronLayout.Shape(24, 1536, 16, 16, 6144, 50257, 1024, 128, DType.F16,
                false, true), 2);
        for (TensorSpec t : built.tensors()) {
            assertTrue(inferred.has(t.name()), "inferred model lacks " + t.name());
            TensorSpec i = inferred.tensor(t.name());
            assertEquals(t.shape(), i.shape(), t.name());
            assertEquals(t.partition(), i.partition(), t.name());
            assertEquals(t.placement(), i.placement(), t.name());
            assertEquals(t.dtype(), i.dtype(), t.name());
        }
        assertEquals(built.tensors().size(), inferred.tensors().size());
        assertEquals("language_model.embedding.word_embeddings.weight", inferred.tiedTo(MegatronLayout.TIED_HEAD));
    }
}
