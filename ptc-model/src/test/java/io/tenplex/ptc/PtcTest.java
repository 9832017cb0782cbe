package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class PtcTest {
    private static final MegatronLayout.Shape GPT2 = MegatronLayout.Shape.gpt(24, 64, 8, 50257, 32);

    @Test
    void megatronRankOrder_roundTrips() {
        ParallelConfig c = ParallelConfig.of(2, 2, 2);
        assertEquals(new RankLayout.Coord(1, 0, 1), RankLayout.MEGATRON.coord(5, c)); // 5 = 1·4 + 0·2 + 1
        assertEquals(6, RankLayout.MEGATRON.rank(new RankLayout.Coord(0, 1, 1), c));
        RankLayout dpFirst = RankLayout.parse("dp,tp,pp");
        for (int r = 0; r < 8; r++) {
            assertEquals(r, dpFirst.rank(dpFirst.coord(r, c), c));
        }
        assertEquals(new RankLayout.Coord(0, 1, 0), dpFirst.coord(1, c));
        assertThrows(IllegalArgumentException.class, () -> RankLayout.parse("tp,pp"));
    }

    @Test
    void valueSource_perScope_fromTheOldConfiguration() {
        Model m = MegatronLayout.model(GPT2, 2);
        Ptc from = Ptc.packed(m, ParallelConfig.of(2, 1, 2), 8); // ranks: tp fastest, then dp
        ValueSpec global = new ValueSpec("iteration", ValueSpec.Scope.GLOBAL);
        ValueSpec position = new ValueSpec("rng_state", ValueSpec.Scope.PER_POSITION);
        ValueSpec dataRank = new ValueSpec("rng", ValueSpec.Scope.PER_DATA_RANK);
        assertEquals(0, from.valueSource(global, 1, 1, 0));
        assertEquals(1, from.valueSource(position, 1, 1, 0)); // (tp 1, dp 0)
        assertEquals(3, from.valueSource(dataRank, 1, 1, 0)); // (tp 1, dp 1): its own
        assertEquals(1, from.valueSource(dataRank, 1, 3, 0)); // dp 3 is new: dp 0 of its position
        assertEquals(0, from.valueSource(dataRank, 2, 1, 0)); // tp 2 is new: rank 0
        assertEquals(0, from.valueSource(dataRank, 0, 1, 1)); // stage 1 is new: rank 0
    }

    @Test
    void vocabularyPadding_matchesMegatron() {
        Model m = MegatronLayout.model(GPT2);
        TensorSpec emb = m.tensor("language_model.embedding.word_embeddings.weight");
        long[] want = {50304, 50432, 50688, 51200};
        int[] tps = {1, 2, 4, 8};
        for (int i = 0; i < tps.length; i++) {
            Ptc p = Ptc.packed(m, ParallelConfig.of(tps[i], 1, 1), 8);
            assertEquals(want[i], p.storedShape(emb).dim(0));
            assertEquals(want[i] / tps[i], p.cell(emb, 0).shape().dim(0));
        }
    }

    @Test
    void pipelineStages_renumberLayers_andPlaceEmbeddingsAndHeads() {
        Model m = MegatronLayout.model(GPT2, 2);
        Ptc p = Ptc.packed(m, ParallelConfig.of(1, 2, 1), 8);
        List<String> stage1 = p.shards(1).stream().map(Ptc.Shard::key).toList();
        assertTrue(stage1.contains("language_model.encoder.layers.0.mlp.dense_h_to_4h.weight"));
        assertTrue(stage1.contains(MegatronLayout.TIED_HEAD));
        assertTrue(stage1.contains("language_model.encoder.final_layernorm.weight"));
        assertTrue(!stage1.contains("language_model.embedding.word_embeddings.weight"));
        assertEquals(12 * 12 * 4 + 2 * 4 + 4, stage1.size()); // (12 layers x 12 params, 2 norms, head) x (param + 3 Adam)
        Ptc.Shard first = p.whoHolds("language_model.encoder.layers.12.self_attention.dense.weight").get(0);
        assertEquals(1, first.rank());
        assertEquals("language_model.encoder.layers.0.self_attention.dense.weight", first.key());
    }

    @Test
    void attentionSplit_keepsWholeHeadsAndQueryGroups() {
        // 8 heads in 2 query groups, head dim 8: a group is 4 q + k + v = 6 heads = 48 rows
        MegatronLayout.Shape gqa = new MegatronLayout.Shape(2, 64, 8, 2, 256, 1000, 16, 128, DType.BF16, false, false);
        Model m = MegatronLayout.model(gqa);
        TensorSpec qkv = m.tensor("language_model.encoder.layers.0.self_attention.query_key_value.weight");
        assertEquals(96, qkv.shape().dim(0));
        Ptc two = Ptc.packed(m, ParallelConfig.of(2, 1, 1), 8);
        assertEquals(IndexRange.of(48, 96), two.cell(qkv, 1).range(0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Ptc.packed(m, ParallelConfig.of(4, 1, 1), 8));
        assertTrue(e.getMessage().contains("query_key_value.weight: dim 0 of size 96 (2 units of 48) cannot be split "
                + "into T=4"), e.getMessage());
    }

    @Test
    void nonDivisibleConfigs_areRejectedClearly() {
        Model m = MegatronLayout.model(GPT2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Ptc.packed(m, ParallelConfig.of(3, 1, 1), 8));
        assertTrue(e.getMessage().contains("cannot be split into T=3"), e.getMessage());
        IllegalArgumentException p = assertThrows(IllegalArgumentException.class,
                () -> Ptc.packed(m, ParallelConfig.of(1, 5, 1), 8));
        assertTrue(p.getMessage().contains("24 layers cannot be split uniformly over P=5"), p.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ParallelConfig(1, 1, 3, 2, false));
    }

    @Test
    void whoHolds_listsEveryReplica() {
        Model m = MegatronLayout.model(GPT2);
        Ptc p = Ptc.packed(m, ParallelConfig.of(2, 1, 2), 2);
        List<Ptc.Shard> h = p.whoHolds("language_model.encoder.layers.3.mlp.dense_4h_to_h.weight");
        assertEquals(4, h.size());
        assertEquals(List.of(0, 2, 1, 3), h.stream().map(Ptc.Shard::rank).toList());
        assertEquals(new Device(1, 0), h.get(1).device());
        assertArrayEquals(new long[] {0, 128}, h.get(2).region().offset());
    }
}
