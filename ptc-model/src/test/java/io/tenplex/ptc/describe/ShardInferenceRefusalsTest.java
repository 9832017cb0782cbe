package io.tenplex.ptc.describe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.TensorMeta;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** An ambiguous or inconsistent description is refused, naming the tensor, the configuration and the misfit. */
class ShardInferenceRefusalsTest {
    private static final PartitionRules RULES = PartitionRules.parse("""
            [{"match": "embed.weight", "partition": "vocab", "divisibleBy": 8, "size": 50, "stage": "first"},
             {"match": "layers.{n}.fc1.weight", "partition": "column"},
             {"match": "layers.{n}.fc2.weight", "partition": "row"},
             {"match": "head.weight", "partition": "replicated", "stage": "last"},
             {"match": "free.weight", "partition": "replicated"}]""", Map.of());

    /** Rank r of (T,P,1) saves: embed on stage 0, one layer per stage, head on the last stage. */
    private static Map<Integer, ShardInference.Saved> saved(ParallelConfig c, UnaryOperator<Map<String, TensorMeta>> edit) {
        Map<Integer, ShardInference.Saved> out = new TreeMap<>();
        for (int r = 0; r < c.worldSize(); r++) {
            int pp = RankLayout.MEGATRON.coord(r, c).pp();
            Map<String, TensorMeta> ts = new LinkedHashMap<>();
            if (pp == 0) {
                ts.put("embed.weight", TensorMeta.of(DType.F32, (c.tp() == 1 ? 56 : 64) / c.tp(), 16));
            }
            ts.put("layers.0.fc1.weight", TensorMeta.of(DType.F32, 32 / c.tp(), 16));
            ts.put("layers.0.fc2.weight", TensorMeta.of(DType.F32, 16, 32 / c.tp()));
            ts.put("optimizer.exp_avg.layers.0.fc1.weight", TensorMeta.of(DType.F32, 32 / c.tp(), 16));
            if (pp == c.pp() - 1) {
                ts.put("head.weight", TensorMeta.of(DType.F32, 4, 16));
            }
            out.put(r, new ShardInference.Saved(r == 1 ? edit.apply(ts) : ts, Set.of()));
        }
        return out;
    }

    private static String refused(ParallelConfig c, UnaryOperator<Map<String, TensorMeta>> edit, PartitionRules rules) {
        return assertThrows(IllegalArgumentException.class, () -> ShardInference.infer(saved(c, edit), c,
                RankLayout.MEGATRON, rules)).getMessage();
    }

    @Test
    void consistentShards_areInferred() {
        ParallelConfig c = ParallelConfig.of(1, 2, 1);
        var m = ShardInference.infer(saved(c, x -> x), c, RankLayout.MEGATRON, RULES);
        assertEquals(2, m.layers());
        assertEquals("layers.1.fc2.weight", m.tensors().get(5).name());
    }

    @Test
    void tensorRanksThatSavedDifferentShapes_areRefused() {
        ParallelConfig c = ParallelConfig.of(2, 1, 1);
        assertEquals("layers.0.fc1.weight: rank 0 saved f32[16, 16] but rank 1 (same stage 0, tensor rank 1) saved "
                + "f32[17, 16] under (T,P,D)=(2,1,1); the tensor ranks of a stage must save the same tensors, equally cut",
                refused(c, ts -> put(ts, "layers.0.fc1.weight", TensorMeta.of(DType.F32, 17, 16)), RULES));
    }

    @Test
    void aTensorNoRuleMatches_isRefused() {
        ParallelConfig c = ParallelConfig.of(1, 1, 1);
        Map<Integer, ShardInference.Saved> s = saved(c, x -> x);
        s.get(0).tensors().put("extra.weight", TensorMeta.of(DType.F32, 3));
        assertEquals("extra.weight f32[3] matches no rule (5 rules); add one", assertThrows(
                IllegalArgumentException.class, () -> ShardInference.infer(s, c, RankLayout.MEGATRON, RULES)).getMessage());
    }

    @Test
    void aStageNothingTells_isRefusedUnderPEquals1() {
        ParallelConfig c = ParallelConfig.of(1, 1, 1);
        Map<Integer, ShardInference.Saved> s = saved(c, x -> x);
        s.get(0).tensors().put("free.weight", TensorMeta.of(DType.F32, 4));
        assertEquals("free.weight is in no layers.<n>. and was saved under (T,P,D)=(1,1,1), which does not say whether "
                + "it belongs to the first or the last stage; give \"stage\" in rule free.weight (rule #4)",
                assertThrows(IllegalArgumentException.class, () -> ShardInference.infer(s, c, RankLayout.MEGATRON,
                        RULES)).getMessage());
    }

    @Test
    void aRuleStageTheShardsContradict_isRefused() {
        ParallelConfig c = ParallelConfig.of(1, 2, 1);
        PartitionRules wrong = PartitionRules.parse("[{\"match\": \"head.weight\", \"partition\": \"replicated\", "
                + "\"stage\": \"first\"}]", Map.of()).then(RULES);
        assertEquals("head.weight: rule head.weight (rule #0) puts it on the first stage but the last stage saved it "
                + "under (T,P,D)=(1,2,1)", refused(c, x -> x, wrong));
    }

    @Test
    void aTensorOnTwoStages_isRefused() {
        ParallelConfig c = ParallelConfig.of(1, 2, 1);
        assertEquals("embed.weight is in no layers.<n>. but saved by stages [0, 1] under (T,P,D)=(1,2,1); it must be on "
                + "the first or the last stage only",
                refused(c, ts -> put(ts, "embed.weight", TensorMeta.of(DType.F32, 56, 16)), RULES));
    }

    @Test
    void aVocabularyThatDoesNotFit_isRefused() {
        ParallelConfig c = ParallelConfig.of(2, 1, 1);
        Map<Integer, ShardInference.Saved> s = saved(c, x -> x);
        s.values().forEach(v -> v.tensors().put("embed.weight", TensorMeta.of(DType.F32, 30, 16)));
        assertEquals("embed.weight: 60 rows saved under (T,P,D)=(2,1,1) are not vocabulary 50 padded for T=2 (64)",
                assertThrows(IllegalArgumentException.class, () -> ShardInference.infer(s, c, RankLayout.MEGATRON,
                        RULES)).getMessage());
    }

    @Test
    void aMomentShapedUnlikeItsParameter_isRefused() {
        ParallelConfig c = ParallelConfig.of(1, 1, 1);
        Map<Integer, ShardInference.Saved> s = saved(c, x -> x);
        s.get(0).tensors().put("optimizer.exp_avg.layers.0.fc1.weight", TensorMeta.of(DType.F32, 16, 32));
        assertEquals("optimizer.exp_avg.layers.0.fc1.weight has shape [16, 32] but its parameter layers.0.fc1.weight "
                + "[32, 16] under (T,P,D)=(1,1,1)", assertThrows(IllegalArgumentException.class,
                        () -> ShardInference.infer(s, c, RankLayout.MEGATRON, RULES)).getMessage());
    }

    @Test
    void unevenStages_andMissingRanks_areRefused() {
        ParallelConfig c = ParallelConfig.of(1, 2, 1);
        assertEquals("stage 1 saved 2 layers but stage 0 1 under (T,P,D)=(1,2,1); only uniform stages can be inferred",
                refused(c, ts -> put(ts, "layers.1.fc1.weight", TensorMeta.of(DType.F32, 32, 16)), RULES));
        Map<Integer, ShardInference.Saved> s = saved(c, x -> x);
        s.remove(1);
        assertEquals("no shards of rank 1 (tensor rank 0 of stage 1) under (T,P,D)=(1,2,1)",
                assertThrows(IllegalArgumentException.class, () -> ShardInference.infer(s, c, RankLayout.MEGATRON,
                        RULES)).getMessage());
    }

    @Test
    void aSplitTheShardsCannotMake_isRefusedByTheCheck() {
        ParallelConfig c = ParallelConfig.of(2, 1, 1);
        PartitionRules granule = PartitionRules.parse("[{\"match\": \"layers.{n}.fc1.weight\", \"partition\": "
                + "\"column\", \"granule\": 12}]", Map.of()).then(RULES);
        assertEquals("layers.0.fc1.weight: dim 0 of size 32 (2 units of 12) cannot be split into T=2 equal parts",
                refused(c, x -> x, granule));
    }

    private static Map<String, TensorMeta> put(Map<String, TensorMeta> ts, String k, TensorMeta m) {
        ts.put(k, m);
        return ts;
    }

    @Test
    void aTieToNoTensor_toItself_orToAnotherShape_isRefused() {
        ParallelConfig c = ParallelConfig.of(1, 2, 1);
        for (String[] bad : new String[][] {{"nosuch.weight", "is no tensor of the model"},
                {"head.weight", "is itself"}, {"layers.0.fc1.weight", "is not shaped as its original"}}) {
            PartitionRules tied = PartitionRules.parse("[{\"match\": \"head.weight\", \"partition\": \"replicated\", "
                    + "\"stage\": \"last\", \"tiedTo\": \"" + bad[0] + "\"}]", Map.of()).then(RULES);
            String m = refused(c, x -> x, tied);
            org.junit.jupiter.api.Assertions.assertTrue(m.contains("tied copy head.weight") && m.contains(bad[1]), m);
        }
    }

    @Test
    void numbersOutOfRange_areRefused_notWrapped() {
        for (String[] bad : new String[][] {{"\"divisibleBy\": 4294967298", "divisibleBy 4294967298 is not in"},
                {"\"dim\": 4294967296", "dim 4294967296 is not in"}, {"\"dim\": 99999999999999999999", "too large"}}) {
            String m = assertThrows(IllegalArgumentException.class, () -> PartitionRules.parse("[{\"match\": \"x\", "
                    + "\"partition\": \"vocab\", " + bad[0] + "}]", Map.of())).getMessage();
            org.junit.jupiter.api.Assertions.assertTrue(m.contains(bad[1]), m);
        }
    }
}
