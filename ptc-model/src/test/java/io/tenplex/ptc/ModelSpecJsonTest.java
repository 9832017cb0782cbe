package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ModelSpecJsonTest {

    @Test
    void documentedExample_parses() {
        String json = """
                {
                  "layers": 2,
                  "tensors": [
                    {"name": "embedding.weight", "dtype": "f16", "shape": [50257, 512], "stage": "first",
                     "partition": {"kind": "vocab", "dim": 0, "divisibleBy": 128}},
                    {"name": "layers.0.mlp.fc1.weight", "dtype": "f16", "shape": [2048, 512], "layer": 0,
                     "partition": {"kind": "split", "dim": 0}},
                    {"name": "layers.1.attn.qkv.weight", "dtype": "bf16", "shape": [1536, 512], "layer": 1,
                     "partition": {"kind": "split", "dim": 0, "granule": 192}},
                    {"name": "layers.1.moe.experts.3.w", "dtype": "f32", "shape": [64, 512], "layer": 1,
                     "partition": {"kind": "expert", "expert": 3, "experts": 8, "inner": {"kind": "split", "dim": 0}}},
                    {"name": "head.weight", "dtype": "f16", "shape": [50257, 512], "stage": "last",
                     "partition": {"kind": "vocab"}},
                    {"name": "final_norm.weight", "dtype": "f32", "shape": [512], "stage": "last",
                     "partition": {"kind": "replicated"}}
                  ],
                  "values": [{"key": "iteration", "scope": "global"}, {"key": "rng_state", "scope": "per-position"},
                             {"key": "rng", "scope": "per-data-rank"}],
                  "ties": {"head.weight": "embedding.weight"}
                }""";
        Model m = ModelSpecJson.parse(json);
        assertEquals(6, m.tensors().size());
        assertEquals(new Partition.Split(0, 192), m.tensor("layers.1.attn.qkv.weight").partition());
        assertEquals("embedding.weight", m.tiedTo("head.weight"));
        Ptc p = Ptc.packed(m, new ParallelConfig(2, 2, 4, 2, false), 8);
        assertEquals(25216, p.cell(m.tensor("embedding.weight"), 1).shape().dim(0));
        assertEquals(m.tensors(), ModelSpecJson.parse(ModelSpecJson.write(m)).tensors());
        assertEquals(ValueSpec.Scope.PER_DATA_RANK, m.values().get(2).scope());
        assertEquals(m.values(), ModelSpecJson.parse(ModelSpecJson.write(m)).values());
    }

    @Test
    void megatronModel_roundTripsThroughJson() {
        Model m = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16), 2);
        Model back = ModelSpecJson.parse(ModelSpecJson.write(m));
        assertEquals(m.tensors(), back.tensors());
        assertEquals(m.values(), back.values());
        assertEquals(m.tiedTo(MegatronLayout.TIED_HEAD), back.tiedTo(MegatronLayout.TIED_HEAD));
    }

    @Test
    void errors_nameTheTensorAndField() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse(
                "{\"layers\": 1, \"tensors\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4], \"layer\": 0}]}"));
        assertEquals("tensor w: missing \"partition\"", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse("{\"layers\": 1, \"tensors\": "
                + "[{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4], \"layer\": 0, \"partition\": {\"kind\": \"diag\"}}]}"));
        assertTrue(e.getMessage().contains("partition kind 'diag'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse("{nope"));
        e = assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse("{\"layers\": 1, \"tensors\": "
                + "[{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4611686018427387904, 1], \"layer\": 0, "
                + "\"partition\": {\"kind\": \"replicated\"}}]}"));
        assertEquals("w: f32[4611686018427387904, 1] has more than 2^63 bytes", e.getMessage());
        String half = "\"dtype\": \"u8\", \"shape\": [4611686018427387904], \"layer\": 0, \"partition\": "
                + "{\"kind\": \"replicated\"}}";
        e = assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse("{\"layers\": 1, \"tensors\": "
                + "[{\"name\": \"a\", " + half + ", {\"name\": \"b\", " + half + "]}"));
        assertEquals("the model's 2 tensors hold more than 2^63 bytes", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ModelSpecJson.parse("{\"layers\": 1, \"tensors\": "
                + "[{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4], \"layer\": 3, \"partition\": {\"kind\": \"replicated\"}}]}"));
    }
}
