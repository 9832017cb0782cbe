package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
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
    private static final String[] CONFIGS = RecordedStructures.CONFIGS;

    private static RecordedStructures.Recorded load(String dir) throws IOException {
        return RecordedStructures.load(dir);
    }

    @Test
    void inferredModel_predictsEveryRecordedConfiguration() throws IOException {
        List<RecordedStructures.Recorded> all = new ArrayList<>();
        for (String c : CONFIGS) {
            all.add(load(c));
        }
        for (RecordedStructures.Recorded a : all) {
            Model inferred = MegatronStructures.infer(a.byRank(), a.config(), RankLayout.MEGATRON, 16, 50257, 128,
                    DType.F16);
            assertEquals(24, inferred.layers());
            for (RecordedStructures.Recorded b : all) {
                Model m = MegatronLayout.forStages(inferred, b.config().pp()); // gains or loses the tied head
                assertSameTensors(inferred, m, a.config() + " vs " + b.config());
                assertSameTensors(MegatronStructures.infer(b.byRank(), b.config(), RankLayout.MEGATRON, 16, 50257, 128,
                        DType.F16), m, a.config() + " vs " + b.config());
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
            assertEquals(s.placement(), t.placement(), what + ": " + t.name());
        }
    }

    @Test
    void forStages_addsOrDropsTheTiedHead_asTheRecordedPipelinesHaveIt() throws IOException {
        Model flat = MegatronStructures.infer(load("pp01/mp02/dp01").byRank(), ParallelConfig.of(2, 1, 1),
                RankLayout.MEGATRON, 16, 50257, 128, DType.F16);
        Model piped = MegatronLayout.forStages(flat, 2);
        assertEquals(flat.tensors().size() + 4, piped.tensors().size()); // the head, its moments and master copy
        for (String kind : List.of("", "optimizer.exp_avg.", "optimizer.exp_avg_sq.", "optimizer.fp32_param.")) {
            assertEquals(kind + "language_model.embedding.word_embeddings.weight", piped.tiedTo(kind
                    + MegatronLayout.TIED_HEAD));
            assertEquals(Placement.last(), piped.tensor(kind + MegatronLayout.TIED_HEAD).placement());
        }
        RecordedStructures.Recorded b = load("pp02/mp01/dp01");
        Ptc ptc = Ptc.packed(piped, b.config(), 8);
        for (Map.Entry<Integer, JsonNode> r : b.byRank().entrySet()) {
            Map<String, Shape> predicted = new LinkedHashMap<>();
            ptc.shards(r.getKey()).forEach(s -> predicted.put(s.key(), s.shape()));
            assertEquals(MegatronStructures.shardShapes(r.getValue()), predicted, "rank " + r.getKey());
        }
        assertEquals(flat.tensors(), MegatronLayout.forStages(piped, 1).tensors());
        assertEquals(null, MegatronLayout.forStages(piped, 1).tiedTo(MegatronLayout.TIED_HEAD));
        assertEquals(piped.tensors(), MegatronLayout.forStages(piped, 4).tensors());
    }

    @Test
    void inferredModel_agreesWithMegatronLayout() throws IOException {
        RecordedStructures.Recorded r = load("pp02/mp02/dp01");
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
