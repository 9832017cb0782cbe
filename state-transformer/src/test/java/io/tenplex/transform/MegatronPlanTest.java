package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** A GPT-2-like model (vocabulary 50257, 24 layers, Adam state) between Megatron configurations on 2 x 4 GPUs. */
class MegatronPlanTest {
    private static final MegatronLayout.Shape GPT2 = MegatronLayout.Shape.gpt(24, 64, 8, 50257, 32);

    static Ptc ptc(int tp, int pp, int dp) {
        return Ptc.packed(MegatronLayout.model(GPT2, pp), ParallelConfig.of(tp, pp, dp), 4);
    }

    private static void assertSame(Map<Integer, Map<String, ReferenceInterpreter.Bytes>> want,
            Map<Integer, Map<String, ReferenceInterpreter.Bytes>> got, String what) {
        assertEquals(want.keySet(), got.keySet(), what);
        for (int rank : want.keySet()) {
            assertEquals(want.get(rank).keySet(), got.get(rank).keySet(), what + " rank " + rank);
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), got.get(rank).get(e.getKey()).data(),
                        what + " rank " + rank + " " + e.getKey());
            }
        }
    }

    @ParameterizedTest(name = "(2,2,2) -> ({0},{1},{2}) -> (2,2,2)")
    @CsvSource({"4,1,2", "1,4,2", "8,1,1"})
    void gpt2_toConfigAndBack_isExact(int tp, int pp, int dp) {
        Ptc a = ptc(2, 2, 2);
        Ptc b = ptc(tp, pp, dp);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(a, 42);
        var shardsA = ReferenceInterpreter.shard(a, full);
        Plan there = Planner.plan(a, b);
        var got = ReferenceInterpreter.apply(there, shardsA, b);
        assertSame(ReferenceInterpreter.shard(b, full), got, "forward");
        Plan back = Planner.plan(b, a);
        assertSame(shardsA, ReferenceInterpreter.apply(back, got, a), "round trip");
        assertEquals(there.report().lowerBound(), there.report().interWorker());
        for (ShardPlan s : there.shards()) {
            PlannerPropertiesTest.assertTiles(s);
        }
    }

    @Test
    void bert_changesOfEveryDimension_roundTripExactly() {
        MegatronLayout.Shape bert = new MegatronLayout.Shape(4, 64, 4, 4, 256, 30522, 32, 128,
                io.tenplex.ptc.DType.F16, true, true);
        Ptc a = Ptc.packed(MegatronLayout.model(bert, 2), ParallelConfig.of(2, 2, 2), 4);
        Ptc b = Ptc.packed(MegatronLayout.model(bert, 1), ParallelConfig.of(4, 1, 1), 2);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(a, 7);
        var shardsA = ReferenceInterpreter.shard(a, full);
        var got = ReferenceInterpreter.apply(Planner.plan(a, b), shardsA, b);
        assertSame(ReferenceInterpreter.shard(b, full), got, "forward");
        assertSame(shardsA, ReferenceInterpreter.apply(Planner.plan(b, a), got, a), "round trip");
    }

    @Test
    void tiedHead_isFilledFromTheEmbeddings_whenStagesAppear() {
        Plan p = Planner.plan(ptc(8, 1, 1), ptc(2, 2, 2));
        ShardPlan head = p.shards().stream().filter(s -> s.tensor().equals(MegatronLayout.TIED_HEAD)).findFirst()
                .orElseThrow();
        assertEquals(4, head.destRank()); // first rank of the last stage
        assertEquals(25216, head.shape().dim(0)); // 50432 / 2
        assertTrue(head.pieces().stream().allMatch(x -> x.sourceKey().equals(
                "language_model.embedding.word_embeddings.weight")));
        assertTrue(head.isMerge()); // 4 source shards of 6304 rows each, ascending
        assertEquals(0, head.pieces().get(0).sourceRank());
        assertEquals(3, head.pieces().get(3).sourceRank());
    }

    @Test
    void vocabularyShrink_dropsPadding_andGrowthPadsZeros() {
        Plan grow = Planner.plan(ptc(1, 1, 8), ptc(8, 1, 1)); // 50304 -> 51200 rows
        ShardPlan last = grow.shards().stream()
                .filter(s -> s.destRank() == 7 && s.tensor().equals("language_model.embedding.word_embeddings.weight"))
                .findFirst().orElseThrow();
        assertEquals(6400, last.shape().dim(0));
        assertEquals(1, last.padding().size());
        assertEquals(51200 - 50257, last.padding().get(0).shape().dim(0));
    }

    @Test
    void values_comeFromDeterministicRanks_andToStringReadsLikeThePaper() {
        Plan p = Planner.plan(ptc(2, 2, 2), ptc(4, 1, 2));
        for (ValueCopy v : p.values()) {
            if (v.key().equals("rng_state")) {
                int destTp = v.destRank() % 4;
                assertEquals(destTp < 2 ? destTp : 0, v.sourceRank(), v.toString());
            } else {
                assertEquals(0, v.sourceRank());
            }
        }
        String text = p.toString();
        assertTrue(text.startsWith("plan (T,P,D)=(2,2,2) -> (T,P,D)=(4,1,2)"), text.substring(0, 80));
        assertTrue(Planner.plan(ptc(4, 1, 2), ptc(2, 2, 2)).toString().contains(" = merge of 2"),
                "merging tensor-parallel shards is shown");
        assertTrue(text.contains("split rank 0 (w0:d0)"), "an on-device split is shown");
        assertTrue(text.contains("fetch rank"), "a cross-worker fetch is shown");
    }
}
