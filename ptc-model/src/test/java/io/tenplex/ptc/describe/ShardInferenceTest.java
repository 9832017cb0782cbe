package io.tenplex.ptc.describe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.MegatronStructures;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.RecordedStructures;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ShardInferenceTest {
    /** The rules of examples/elastic_encoder.py's model, with the stages and the vocabulary size inference needs. */
    private static final PartitionRules ENCODER = PartitionRules.parse("""
            {"rules": [
              {"match": "embed.weight", "partition": "vocab", "divisibleBy": 8, "size": 50, "stage": "first"},
              {"match": "lm_head.weight", "partition": "vocab", "divisibleBy": 8, "size": 50, "stage": "last",
               "tiedTo": "embed.weight"},
              {"match": "pos", "partition": "replicated", "stage": "first"},
              {"match": "norm.*", "partition": "replicated", "stage": "last"},
              {"match": "head.*", "partition": "replicated", "stage": "last"}
            ]}""", Map.of()).then(PartitionRules.shipped("transformer", Map.of()));

    /** The encoder classifier: 4 layers, hidden 32, ffn 64, vocabulary 50, a tied head, Adam's moments. */
    static Model encoder() {
        List<TensorSpec> ts = new ArrayList<>();
        Map<String, String> ties = new LinkedHashMap<>();
        add(ts, "pos", Shape.of(12, 32), Placement.first(), new Partition.Replicated(), false);
        add(ts, "embed.weight", Shape.of(50, 32), Placement.first(), new Partition.VocabSplit(0, 8), true);
        for (int l = 0; l < 4; l++) {
            String p = "encoder.layers." + l + ".";
            Placement at = Placement.layer(l);
            add(ts, p + "self_attn.in_proj_weight", Shape.of(96, 32), at, new Partition.Replicated(), true);
            add(ts, p + "self_attn.in_proj_bias", Shape.of(96), at, new Partition.Replicated(), true);
            add(ts, p + "self_attn.out_proj.weight", Shape.of(32, 32), at, new Partition.Split(1, 1), true);
            add(ts, p + "self_attn.out_proj.bias", Shape.of(32), at, new Partition.Replicated(), true);
            add(ts, p + "linear1.weight", Shape.of(64, 32), at, new Partition.Split(0, 1), true);
            add(ts, p + "linear1.bias", Shape.of(64), at, new Partition.Split(0, 1), true);
            add(ts, p + "linear2.weight", Shape.of(32, 64), at, new Partition.Split(1, 1), true);
            add(ts, p + "linear2.bias", Shape.of(32), at, new Partition.Replicated(), true);
            add(ts, p + "norm1.weight", Shape.of(32), at, new Partition.Replicated(), true);
        }
        add(ts, "norm.weight", Shape.of(32), Placement.last(), new Partition.Replicated(), true);
        add(ts, "head.weight", Shape.of(4, 32), Placement.last(), new Partition.Replicated(), true);
        add(ts, "lm_head.weight", Shape.of(50, 32), Placement.last(), new Partition.VocabSplit(0, 8), true);
        ties.put("lm_head.weight", "embed.weight");
        ties.put("optimizer.exp_avg.lm_head.weight", "optimizer.exp_avg.embed.weight");
        ties.put("optimizer.exp_avg_sq.lm_head.weight", "optimizer.exp_avg_sq.embed.weight");
        return new Model(ts, List.of(new ValueSpec("optimizer.step", ValueSpec.Scope.GLOBAL)), 4, ties);
    }

    private static void add(List<TensorSpec> ts, String name, Shape s, Placement at, Partition p, boolean moments) {
        ts.add(new TensorSpec(name, DType.F64, s, at, p));
        if (moments) {
            for (String k : List.of("exp_avg", "exp_avg_sq")) {
                ts.add(new TensorSpec("optimizer." + k + "." + name, DType.F64, s, at, p));
            }
        }
    }

    /** What every rank of data-parallel index 0 saves under {@code c}: its shards' shapes. */
    static Map<Integer, ShardInference.Saved> saved(Model m, ParallelConfig c) {
        Ptc ptc = Ptc.packed(m, c, c.worldSize());
        Map<Integer, ShardInference.Saved> out = new TreeMap<>();
        for (int r = 0; r < c.worldSize(); r++) {
            if (RankLayout.MEGATRON.coord(r, c).dp() != 0) {
                continue;
            }
            Map<String, TensorMeta> ts = new LinkedHashMap<>();
            for (Ptc.Shard s : ptc.shards(r)) {
                ts.put(s.key(), new TensorMeta(s.spec().dtype(), s.shape()));
            }
            out.put(r, new ShardInference.Saved(ts, Set.of("optimizer.step")));
        }
        return out;
    }

    private static Map<String, TensorSpec> byName(Model m) {
        Map<String, TensorSpec> out = new TreeMap<>();
        m.tensors().forEach(t -> out.put(t.name(), t));
        return out;
    }

    /** Equal maps, or the first tensor that differs (the whole maps are too long to read in a failure). */
    private static void assertSame(Map<String, TensorSpec> want, Map<String, TensorSpec> got, String where) {
        assertEquals(want.keySet(), got.keySet(), where);
        want.forEach((k, v) -> assertEquals(v, got.get(k), where + " " + k));
    }

    @Test
    void encoder_inferredFromItsShards_underEveryConfiguration_isTheModel() {
        Model m = encoder();
        for (ParallelConfig c : List.of(ParallelConfig.of(2, 1, 2), ParallelConfig.of(1, 2, 2), ParallelConfig.of(4, 1, 1),
                ParallelConfig.of(2, 2, 1), ParallelConfig.of(1, 4, 1))) {
            Model inferred = ShardInference.infer(saved(m, c), c, RankLayout.MEGATRON, ENCODER);
            assertSame(byName(m), byName(inferred), c.toString());
            assertEquals(4, inferred.layers());
            assertEquals(m.values(), inferred.values());
            for (TensorSpec t : m.tensors()) {
                assertEquals(m.tiedTo(t.name()), inferred.tiedTo(t.name()), t.name());
            }
        }
    }

    /** Every recorded Megatron GPT configuration: the shipped rules infer what MegatronStructures infers. */
    @Test
    void megatronGpt_shippedRules_inferWhatMegatronStructuresInfers() throws Exception {
        PartitionRules meg = PartitionRules.shipped("megatron", Map.of("qkv_granule", 288L, "vocab", 50257L));
        for (String dir : RecordedStructures.CONFIGS) {
            RecordedStructures.Recorded rec = RecordedStructures.load(dir);
            Map<Integer, ShardInference.Saved> saved = new TreeMap<>();
            rec.byRank().forEach((rank, s) -> {
                Map<String, TensorMeta> ts = new LinkedHashMap<>();
                MegatronStructures.shardShapes(s).forEach((k, shape) -> ts.put(k, new TensorMeta(
                        k.startsWith("optimizer.") ? DType.F32 : DType.F16, shape)));
                saved.put(rank, new ShardInference.Saved(ts, Set.of()));
            });
            Model want = MegatronStructures.infer(rec.byRank(), rec.config(), RankLayout.MEGATRON, 16, 50257, 128,
                    DType.F16);
            Model got = ShardInference.infer(saved, rec.config(), RankLayout.MEGATRON, meg);
            assertSame(byName(want), byName(got), dir);
            for (TensorSpec t : want.tensors()) {
                assertEquals(want.tiedTo(t.name()), got.tiedTo(t.name()), dir + " " + t.name());
            }
        }
    }
}
