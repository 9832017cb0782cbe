package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

class ParallelizerTest {
    /** GPT with 4 layers, hidden 64, 8 heads, vocabulary 1000, sequence 16. */
    private static final Model GPT = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));

    @Test
    void table_readsThePrototypesFormat_andRefusesBadEntries() {
        ParaConfigTable t = ParaConfigTable.parse("{\"4\": {\"mp_size\": 2, \"pp_size\": 2, \"dp_size\": 1},"
                + " \"8\": {\"mp_size\": 2, \"pp_size\": 2, \"dp_size\": 2}}");
        assertEquals(ParallelConfig.of(2, 2, 2), t.choose(new Parallelizer.Request(8, 4, null, 0)));
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> t.choose(new Parallelizer.Request(6, 4, null, 0)));
        assertEquals("the para-config table has no entry for 6 devices (it has [4, 8])", missing.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ParaConfigTable.parse(
                "{\"4\": {\"mp_size\": 2, \"pp_size\": 1, \"dp_size\": 1}}")).getMessage()
                .contains("mp_size*pp_size*dp_size = 2*1*1 = 2, not 4"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ParaConfigTable.parse(
                "{\"x\": {}}")).getMessage().contains("'x' is not a number of GPUs"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ParaConfigTable.parse("[1]")).getMessage()
                .contains("non-empty JSON object"));
    }

    @Test
    void builtin_prefersDataParallelism_keepsTensorParallelismInAWorker() {
        BuiltinChooser c = new BuiltinChooser();
        assertEquals(ParallelConfig.of(1, 1, 8), c.choose(new Parallelizer.Request(8, 4, GPT, 0)));
        assertEquals(ParallelConfig.of(1, 1, 6), c.choose(new Parallelizer.Request(6, 2, GPT, 0)));
    }

    @Test
    void builtin_respectsMemory_byShardingAsLittleAsNeeded() {
        List<BuiltinChooser.Candidate> all = BuiltinChooser.candidates(new Parallelizer.Request(8, 4, GPT, 0));
        long whole = all.stream().filter(x -> x.config().equals(ParallelConfig.of(1, 1, 8))).findFirst().orElseThrow()
                .bytesPerDevice();
        long half = all.stream().filter(x -> x.config().equals(ParallelConfig.of(2, 1, 4))).findFirst().orElseThrow()
                .bytesPerDevice();
        assertTrue(half < whole, half + " vs " + whole);
        BuiltinChooser c = new BuiltinChooser();
        // a device that cannot hold the whole model: the cheapest sharding that fits, then most D
        ParallelConfig chosen = c.choose(new Parallelizer.Request(8, 4, GPT, whole - 1));
        assertEquals(4, chosen.dp(), chosen.toString());
        assertEquals(2, chosen.tp() * chosen.pp(), chosen.toString());
        assertEquals(ParallelConfig.of(2, 1, 4), chosen); // P=2 has bubbles: T first at the same D
    }

    @Test
    void builtin_rejectsWhatTheModelCannotSplit_withReasons() {
        // 8 heads: T=16 cannot divide them; 4 layers: P=8 cannot divide them; 16 devices per worker
        List<BuiltinChooser.Candidate> all = BuiltinChooser.candidates(new Parallelizer.Request(16, 16, GPT, 0));
        String t16 = all.stream().filter(x -> x.config().tp() == 16).findFirst().orElseThrow().rejected();
        assertTrue(t16 != null && t16.contains("cannot be split into T=16"), t16);
        String p8 = all.stream().filter(x -> x.config().equals(ParallelConfig.of(1, 8, 2))).findFirst().orElseThrow()
                .rejected();
        assertTrue(p8 != null && p8.contains("4 layers cannot be split uniformly over P=8"), p8);
        String cross = BuiltinChooser.candidates(new Parallelizer.Request(8, 2, GPT, 0)).stream()
                .filter(x -> x.config().tp() == 4).findFirst().orElseThrow().rejected();
        assertEquals("T=4 does not divide the 2 devices of a worker", cross);
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> new BuiltinChooser().choose(new Parallelizer.Request(8, 4, GPT, 1000)));
        assertTrue(none.getMessage().startsWith("no parallel configuration fits 8 devices:"), none.getMessage());
        assertTrue(none.getMessage().contains("exceed the 1000 bytes per device"), none.getMessage());
    }

    @Test
    void builtin_countsMegatronsTiedHeadOnTheLastStage_whenP_isAboveOne() {
        // as P = 1 saves it (no word_embeddings_for_head); P = 2 stores the head on the last stage, which,
        // with one position, then holds more than the first (final norm and head against 1 position)
        Model gpt = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 1));
        long withHead = mostPerDevice(MegatronLayout.forStages(gpt, 2), 2);
        long without = mostPerDevice(gpt, 2);
        assertTrue(withHead > without, withHead + " vs " + without);
        long chosen = BuiltinChooser.candidates(new Parallelizer.Request(8, 4, gpt, 0)).stream()
                .filter(x -> x.config().equals(ParallelConfig.of(1, 2, 4))).findFirst().orElseThrow().bytesPerDevice();
        assertEquals(withHead, chosen);
    }

    private static long mostPerDevice(Model m, int pp) {
        ParallelConfig c = ParallelConfig.of(1, pp, 4);
        io.tenplex.ptc.Ptc ptc = new io.tenplex.ptc.Ptc(m, c, io.tenplex.ptc.RankLayout.MEGATRON,
                io.tenplex.ptc.StageMap.uniform(m.layers(), pp), io.tenplex.ptc.Ptc.packedDevices(8, 4));
        long most = 0;
        for (int rank = 0; rank < 8; rank++) {
            most = Math.max(most, ptc.shards(rank).stream().mapToLong(io.tenplex.ptc.Ptc.Shard::bytes).sum());
        }
        return most;
    }
}
