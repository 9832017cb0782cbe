package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * BERT (pooler and heads on the last stage, the tied head registered before them) and fp32
 * training (Adam state without master copies) on checkpoint structures written from Megatron's
 * rules ({@link MegatronRules}): every rank's structure is read, and the model inferred from any
 * configuration predicts the shards of every other, P = 1 and P > 1 both ways.
 */
class MegatronBertAndFp32Test {
    static final MegatronRules.Arch BERT = new MegatronRules.Arch(true, 24, 1024, 16, 30522, 512, false);
    static final MegatronRules.Arch BERT_FP32 = new MegatronRules.Arch(true, 24, 1024, 16, 30522, 512, true);
    static final MegatronRules.Arch GPT_FP32 = new MegatronRules.Arch(false, 24, 1536, 16, 50257, 1024, true);
    private static final List<ParallelConfig> CONFIGS = List.of(ParallelConfig.of(1, 1, 1), ParallelConfig.of(2, 1, 1),
            ParallelConfig.of(4, 1, 1), ParallelConfig.of(1, 2, 1), ParallelConfig.of(2, 2, 1), ParallelConfig.of(4, 2, 1),
            ParallelConfig.of(2, 4, 1));

    static Stream<MegatronRules.Arch> archs() {
        return Stream.of(BERT, BERT_FP32, GPT_FP32);
    }

    static Stream<MegatronRules.Arch> fp32Archs() {
        return Stream.of(BERT_FP32, GPT_FP32);
    }

    private static Model infer(MegatronRules.Arch a, ParallelConfig c) {
        return MegatronStructures.infer(MegatronRules.structures(a, c).byRank(), c, RankLayout.MEGATRON, a.heads(),
                a.vocab(), 128, a.fp32() ? DType.F32 : DType.F16);
    }

    @Test
    void bertPipeline_lastStage_readsOptimizerStateInMegatronsParameterOrder() {
        ParallelConfig c = ParallelConfig.of(2, 2, 1);
        for (int stage = 0; stage < 2; stage++) {
            Map<String, Shape> read = MegatronStructures.shardShapes(MegatronRules.rank(BERT, c, stage));
            assertEquals(MegatronRules.expectedShards(BERT, c, stage), read, "stage " + stage);
        }
        assertEquals(List.of("language_model.encoder.final_layernorm.weight", MegatronLayout.TIED_HEAD, "lm_head.bias",
                "binary_head.weight"), MegatronStructures.parameterOrder(List.of("language_model.encoder.final_layernorm"
                + ".weight", "lm_head.bias", "binary_head.weight", MegatronLayout.TIED_HEAD)));
    }

    @ParameterizedTest
    @MethodSource("archs")
    void inferredFromAnyConfiguration_predictsEveryConfiguration(MegatronRules.Arch arch) {
        for (ParallelConfig a : CONFIGS) {
            Model inferred = infer(arch, a);
            for (ParallelConfig b : CONFIGS) {
                Ptc ptc = Ptc.packed(MegatronLayout.forStages(inferred, b.pp()), b, 8);
                for (Map.Entry<Integer, JsonNode> r : MegatronRules.structures(arch, b).byRank().entrySet()) {
                    Map<String, Shape> predicted = new LinkedHashMap<>();
                    for (Ptc.Shard s : ptc.shards(r.getKey())) {
                        predicted.put(s.key(), s.shape());
                    }
                    assertEquals(MegatronStructures.shardShapes(r.getValue()), predicted,
                            arch + " from " + a + ": rank " + r.getKey() + " of " + b);
                }
            }
        }
    }

    @Test
    void bertFromOneStage_keepsPoolerAndHeadsOnTheLastStage() {
        Model m = infer(BERT, ParallelConfig.of(2, 1, 1));
        for (TensorSpec t : m.tensors()) {
            String param = t.name().startsWith("optimizer.") ? t.name().substring(t.name().indexOf('.', 10) + 1) : t.name();
            Placement want = TensorSpec.layerIn(param) >= 0 ? t.placement()
                    : param.startsWith("language_model.embedding.") ? Placement.first() : Placement.last();
            assertEquals(want, t.placement(), t.name());
        }
        assertEquals(Placement.last(), m.tensor("language_model.pooler.dense.weight").placement());
        assertEquals(Placement.last(), m.tensor("optimizer.exp_avg_sq.binary_head.bias").placement());
        Ptc piped = Ptc.packed(MegatronLayout.forStages(m, 2), ParallelConfig.of(2, 2, 1), 8);
        assertTrue(piped.shards(2).stream().anyMatch(s -> s.key().equals("lm_head.dense.weight")), "on the last stage");
        assertTrue(piped.shards(0).stream().noneMatch(s -> s.key().startsWith("lm_head.")), "not on the first stage");
    }

    @ParameterizedTest
    @MethodSource("fp32Archs")
    void fp32_hasBothMomentsButNoMasterCopies_andAgreesWithMegatronLayout(MegatronRules.Arch arch) {
        ParallelConfig c = ParallelConfig.of(2, 2, 1);
        Map<String, Shape> last = MegatronStructures.shardShapes(MegatronRules.rank(arch, c, 1));
        assertTrue(last.containsKey("optimizer.exp_avg." + MegatronLayout.TIED_HEAD), last.keySet().toString());
        assertTrue(last.containsKey("optimizer.exp_avg_sq.language_model.encoder.final_layernorm.bias"));
        assertFalse(last.keySet().stream().anyMatch(k -> k.startsWith("optimizer.fp32_param.")), "no master copies");
        Model inferred = infer(arch, c);
        assertTrue(inferred.values().stream().noneMatch(v -> v.key().equals("optimizer.grad_scaler")), "no grad scaler");
        Model built = MegatronLayout.model(new MegatronLayout.Shape(arch.layers(), arch.hidden(), arch.heads(),
                arch.heads(), 4 * arch.hidden(), arch.vocab(), arch.seq(), 128, DType.F32, arch.bert(), true), 2);
        assertEquals(built.tensors().size(), inferred.tensors().size());
        for (TensorSpec t : built.tensors()) {
            TensorSpec i = inferred.tensor(t.name());
            assertEquals(t, i, t.name());
            assertEquals(built.tiedTo(t.name()), inferred.tiedTo(t.name()), t.name());
        }
    }
}
