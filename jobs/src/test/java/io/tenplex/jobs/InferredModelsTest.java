package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.reconfigure.InferredModels;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.describe.PartitionRules;
import org.junit.jupiter.api.Test;

/** The stored form of partition rules: inline rules, shipped sets by name, parameters. */
class InferredModelsTest {
    @Test
    void storedRules_mayNameShippedSets_readInPlace_withTheirParameters() {
        PartitionRules r = InferredModels.parseRules("""
                {"rules": [{"match": "*.query_key_value.weight", "partition": "replicated"}, "megatron",
                           {"match": "extra.w", "partition": "row"}],
                 "params": {"vocab": 50257, "qkv_granule": 192}}""");
        // the inline rule before the shipped set wins; the shipped set cuts dense_h_to_4h by columns
        assertEquals(new Partition.Replicated(), r.match("layers.0.self_attention.query_key_value.weight").orElseThrow()
                .partition());
        assertEquals(new Partition.Split(0, 1), r.match("layers.0.mlp.dense_h_to_4h.weight").orElseThrow().partition());
        assertEquals(50257L, r.match("word_embeddings_for_head.weight").orElseThrow().size());
        // read in order: the shipped set's catch-all comes before the rule after it
        assertEquals(new Partition.Replicated(), r.match("extra.w").orElseThrow().partition());
    }

    @Test
    void badStoredRules_areRefusedWithTheReason() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> InferredModels.parseRules(
                "{\"rules\": [\"nosuch\"]}")).getMessage().contains("no shipped rules 'nosuch'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> InferredModels.parseRules(
                "{\"rules\": [\"megatron\"]}")).getMessage().contains("no such parameter"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> InferredModels.parseRules(
                "{\"rules\": [], \"params\": {\"vocab\": \"x\"}}")).getMessage().contains("whole number"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> InferredModels.parseRules(
                "{\"rules\": 3}")).getMessage().contains("expected {\"rules\": [...]}"));
    }
}
