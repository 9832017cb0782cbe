package io.tenplex.ptc.describe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronStructures;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import io.tenplex.ptc.Shape;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PartitionRulesTest {
    private static final Map<String, Long> GPT = Map.of("qkv_granule", 288L, "vocab", 50257L);

    @Test
    void kinds_shortAndObjectForms_firstMatchWins() {
        PartitionRules r = PartitionRules.parse("""
                {"rules": [
                  {"match": "embed.weight", "partition": "vocab", "divisibleBy": 8, "size": 50, "stage": "first"},
                  {"match": "*.linear1.*", "partition": "column"},
                  {"match": "*.attn.qkv.weight", "partition": "column", "granule": "${g}"},
                  {"match": "*.linear2.weight", "partition": "row"},
                  {"match": "moe.experts.{e}.w", "partition": "expert", "experts": 8, "inner": "row"},
                  {"match": "x.y", "partition": {"kind": "split", "dim": 2}},
                  {"match": "*", "partition": "replicated"}
                ]}""", Map.of("g", 24L));
        assertEquals(new Partition.VocabSplit(0, 8), r.match("embed.weight").orElseThrow().partition());
        assertEquals(Placement.Kind.FIRST, r.match("embed.weight").orElseThrow().stage());
        assertEquals(50L, r.match("embed.weight").orElseThrow().size());
        assertEquals(new Partition.Split(0, 1), r.match("encoder.layers.3.linear1.bias").orElseThrow().partition());
        assertEquals(new Partition.Split(0, 24), r.match("layers.0.attn.qkv.weight").orElseThrow().partition());
        assertEquals(new Partition.Split(1, 1), r.match("a.linear2.weight").orElseThrow().partition());
        assertEquals(new Partition.Replicated(), r.match("a.linear2.bias").orElseThrow().partition());
        assertEquals(new Partition.Expert(5, 8, new Partition.Split(1, 1)),
                r.match("moe.experts.5.w").orElseThrow().partition());
        assertEquals(new Partition.Split(2, 1), r.match("x.y").orElseThrow().partition());
        assertTrue(PartitionRules.parse("{\"rules\": []}", Map.of()).match("x").isEmpty());
    }

    @Test
    void badRules_areRefusedNamingTheRule() {
        assertEquals("rule #0 'w': partition 'diagonal' is not column, row, split, replicated, vocab or expert",
                bad("[{\"match\": \"w\", \"partition\": \"diagonal\"}]"));
        assertEquals("rule #0 'w': granule is ${g}, but no such parameter was given (parameters: [])",
                bad("[{\"match\": \"w\", \"partition\": \"column\", \"granule\": \"${g}\"}]"));
        assertEquals("rule #0 'e.w': an expert rule needs {e} in its pattern, and only an expert rule may have one",
                bad("[{\"match\": \"e.w\", \"partition\": \"expert\", \"experts\": 2}]"));
        assertEquals("rule #0 'w': stage 'middle' is not first or last",
                bad("[{\"match\": \"w\", \"partition\": \"replicated\", \"stage\": \"middle\"}]"));
        assertTrue(bad("[{\"partition\": \"replicated\"}]").startsWith("rule #0: a rule needs \"match\""));
        assertTrue(bad("{").startsWith("rules are not valid JSON"));
        assertEquals("no shipped rules 'nope' (shipped: megatron, transformer)",
                assertThrows(IllegalArgumentException.class, () -> PartitionRules.shipped("nope", Map.of())).getMessage());
    }

    private static String bad(String json) {
        return assertThrows(IllegalArgumentException.class, () -> PartitionRules.parse(json, Map.of())).getMessage();
    }

    /** The shipped Megatron rules say what MegatronStructures' naming rules say, for every recorded GPT name. */
    @Test
    void shippedMegatronRules_agreeWithMegatronStructures() throws Exception {
        PartitionRules meg = PartitionRules.shipped("megatron", GPT);
        for (String config : io.tenplex.ptc.RecordedStructures.CONFIGS) {
            var rec = io.tenplex.ptc.RecordedStructures.load(config);
            for (var structure : rec.byRank().values()) {
                for (Map.Entry<String, Shape> e : MegatronStructures.shardShapes(structure).entrySet()) {
                    String param = e.getKey().replaceFirst("^optimizer\\.(exp_avg|exp_avg_sq|fp32_param)\\.", "");
                    Shape local = MegatronStructures.shardShapes(structure).get(param);
                    assertEquals(MegatronStructures.partitionOf(param, local, 16, 128, rec.config().tp()),
                            meg.match(param).orElseThrow().partition(), param);
                }
            }
        }
        assertEquals(Placement.Kind.LAST, meg.match("language_model.pooler.dense.weight").orElseThrow().stage());
        assertEquals(Placement.Kind.LAST, meg.match("binary_head.weight").orElseThrow().stage());
    }

    @Test
    void shippedTransformerRules_cutTorchNnLayers() {
        PartitionRules t = PartitionRules.shipped("transformer", Map.of());
        assertEquals(new Partition.Split(0, 1), t.match("encoder.layers.0.linear1.weight").orElseThrow().partition());
        assertEquals(new Partition.Split(1, 1), t.match("encoder.layers.0.self_attn.out_proj.weight").orElseThrow()
                .partition());
        assertEquals(new Partition.Replicated(), t.match("decoder.layers.2.multihead_attn.in_proj_weight").orElseThrow()
                .partition());
        assertEquals(new Partition.Replicated(), t.match("encoder.layers.1.norm2.bias").orElseThrow().partition());
        assertTrue(t.match("embed.weight").isEmpty(), "nothing outside the layers");
    }

    /** ptc-model ships the Python client's rules files, not copies of them. */
    @Test
    void shippedRules_areThePythonClientsFiles() throws Exception {
        Path dir = Path.of(System.getProperty("user.dir")).getParent().resolve("clients/python/tenplex/rulesets");
        for (String name : List.of("megatron", "transformer")) {
            try (var in = PartitionRules.class.getResourceAsStream(name + ".json")) {
                assertEquals(Files.readString(dir.resolve(name + ".json")), new String(in.readAllBytes(),
                        java.nio.charset.StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void aPatternOfManyWildcards_isRefusedAsTooCostly_ratherThanStallingTheMatch() {
        PartitionRules r = PartitionRules.parse("{\"rules\": [{\"match\": \"" + "*a".repeat(12) + "*b\", "
                + "\"partition\": \"replicated\"}]}", java.util.Map.of());
        String name = "a".repeat(300);
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
                java.time.Duration.ofSeconds(20), () -> org.junit.jupiter.api.Assertions.assertThrows(
                        IllegalArgumentException.class, () -> r.match(name)));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("too costly"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertTrue(r.match("xayb").isEmpty() && r.match("a".repeat(12) + "b")
                .isPresent());
    }
}
