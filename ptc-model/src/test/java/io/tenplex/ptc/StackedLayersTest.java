package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * An encoder-decoder's two stacks of {@code layers.<n>} numbered in module order (as
 * {@code tenplex.describe} numbers them): encoder layers 0..E-1, decoder layers E..E+D-1, the
 * encoder's final norm on the stage of the encoder's last layer. Each stage keys a stack's layers from
 * 0 at the first one it holds; under P = 1 every key is the tensor's own name.
 */
class StackedLayersTest {
    private static Model transformer(int encoders, int decoders) {
        List<String> tensors = new ArrayList<>();
        for (int i = 0; i < encoders; i++) {
            tensors.add(tensor("encoder.layers." + i + ".linear1.weight", i));
        }
        tensors.add(tensor("encoder.norm.weight", encoders - 1));
        for (int i = 0; i < decoders; i++) {
            tensors.add(tensor("decoder.layers." + i + ".linear1.weight", encoders + i));
        }
        tensors.add("{\"name\": \"decoder.norm.weight\", \"dtype\": \"f32\", \"shape\": [4], \"stage\": \"last\", "
                + "\"partition\": {\"kind\": \"replicated\"}}");
        return ModelSpecJson.parse("{\"layers\": " + (encoders + decoders) + ", \"values\": [], \"tensors\": ["
                + String.join(",", tensors) + "]}");
    }

    private static String tensor(String name, int layer) {
        return "{\"name\": \"" + name + "\", \"dtype\": \"f32\", \"shape\": [4], \"layer\": " + layer
                + ", \"partition\": {\"kind\": \"replicated\"}}";
    }

    /** Per stage, the keys it stores, in model order. */
    private static Map<Integer, List<String>> keysByStage(Model m, int pp) {
        Ptc p = Ptc.packed(m, ParallelConfig.of(1, pp, 1), 8);
        Map<Integer, List<String>> out = new TreeMap<>();
        for (int s = 0; s < pp; s++) {
            out.put(s, p.shards(s).stream().map(Ptc.Shard::key).toList());
        }
        return out;
    }

    @Test
    void twoStacks_pipelineOfTwo_encoderOnStage0_decoderOnStage1_keyedAsEachStageHoldsThem() {
        assertEquals(Map.of(
                0, List.of("encoder.layers.0.linear1.weight", "encoder.layers.1.linear1.weight", "encoder.norm.weight"),
                1, List.of("decoder.layers.0.linear1.weight", "decoder.layers.1.linear1.weight", "decoder.norm.weight")),
                keysByStage(transformer(2, 2), 2));
    }

    @Test
    void twoStacks_oneStage_keysAreTheNames() {
        assertEquals(List.of("encoder.layers.0.linear1.weight", "encoder.layers.1.linear1.weight", "encoder.norm.weight",
                "decoder.layers.0.linear1.weight", "decoder.norm.weight"), keysByStage(transformer(2, 1), 1).get(0));
    }

    @Test
    void twoStacks_aStageInsideEachStack_numbersEachStackFromItsFirstLayerThere() {
        // 3 + 3 layers over P = 3: stage 1 holds encoder layer 2 and decoder layer 0
        Map<Integer, List<String>> k = keysByStage(transformer(3, 3), 3);
        assertEquals(List.of("encoder.layers.0.linear1.weight", "encoder.layers.1.linear1.weight"), k.get(0));
        assertEquals(List.of("encoder.layers.0.linear1.weight", "encoder.norm.weight", "decoder.layers.0.linear1.weight"),
                k.get(1));
        assertEquals(List.of("decoder.layers.0.linear1.weight", "decoder.layers.1.linear1.weight",
                "decoder.norm.weight"), k.get(2));
    }
}
