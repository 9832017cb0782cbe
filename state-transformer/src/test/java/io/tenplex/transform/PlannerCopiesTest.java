package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * Planning with complete copies of old ranks' trees on other workers (partner copies, when
 * recovering): reads are balanced over every holder of a copy, and the plan stays exact.
 */
class PlannerCopiesTest {
    private final PlannerPropertiesTest props = new PlannerPropertiesTest();

    private static Ptc ptc(Model m, ParallelConfig c, List<Device> devices) {
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), c.pp()), devices);
    }

    /**
     * The shape of {@code bench/netns-recover.sh} (L2): (2,2,1), rank r on worker r, worker w keeping a
     * copy of worker w-1's rank, worker 3 lost (rank 3 read on worker 0), the new (1,3,1) on workers
     * 0..2, whose last stage holds the tied head filled from the word embeddings of ranks 0 and 1.
     */
    @Test
    void benchmarkRecovery_wordEmbeddingsReadFromTheCopyOnTheWorkerThatNeedsThem_busiestLink154To98MiB() {
        Model model = MegatronLayout.model(new MegatronLayout.Shape(6, 512, 8, 8, 2048, 16384, 512, 128, DType.F16,
                false, true));
        Ptc from = ptc(MegatronLayout.asSaved(model, 2), ParallelConfig.of(2, 2, 1),
                List.of(new Device(0, 0), new Device(1, 0), new Device(2, 0), new Device(0, 4)));
        Ptc to = ptc(MegatronLayout.forStages(model, 3), ParallelConfig.of(1, 3, 1),
                List.of(new Device(0, 0), new Device(1, 0), new Device(2, 0)));
        Plan alone = Planner.plan(from, to);
        Plan copies = Planner.plan(from, to, Map.of(0, List.of(1), 1, List.of(2), 3, List.of(0)));
        assertEquals(154, busiest(alone) >> 20, "MiB through the busiest link, each rank read where it is placed");
        assertEquals(98, busiest(copies) >> 20, "MiB through the busiest link, reads spread over the copies");
        assertEquals(Map.of(0, 98L, 1, 42L, 2, 98L), mib(copies.report().receivedByWorker()));
        boolean fromCopy = false;
        for (ShardPlan s : copies.shards()) {
            for (Piece p : s.pieces()) {
                if (p.sourceRank() == 1 && s.destDevice().worker() == 2) {
                    assertEquals(new Device(2, 6), p.sourceDevice(), p.toString()); // worker 2 copy of rank 1: local 4 + 1 + 1
                    assertEquals(Piece.Kind.LOCAL, p.kind());
                    fromCopy = true;
                }
            }
        }
        assertTrue(fromCopy, "worker 2 reads rank 1's word embeddings from its own copy");
    }

    private static long busiest(Plan p) {
        long most = p.report().maxSent();
        for (long b : p.report().receivedByWorker().values()) {
            most = Math.max(most, b);
        }
        return most;
    }

    private static Map<Integer, Long> mib(Map<Integer, Long> bytes) {
        Map<Integer, Long> out = new HashMap<>();
        bytes.forEach((w, b) -> out.put(w, b >> 20));
        return out;
    }

    @Provide
    net.jqwik.api.Arbitrary<PlannerPropertiesTest.Setup> setups() {
        return props.setups();
    }

    /** Random copies: the plan still equals direct sharding, and every piece is read from its rank or a copy of it. */
    @Property(tries = 150)
    void withCopies_applyingThePlan_equalsShardingDirectly(@ForAll("setups") PlannerPropertiesTest.Setup s) {
        Model m = PlannerPropertiesTest.randomModel(s.seed());
        Ptc from = PlannerPropertiesTest.ptcOrRefusal(m, s.a(), s.ga(), s.wa());
        Ptc to = PlannerPropertiesTest.ptcOrRefusal(m, s.b(), s.gb(), s.wb());
        if (from == null || to == null) {
            return;
        }
        Random r = new Random(s.seed());
        Map<Integer, List<Integer>> copies = new HashMap<>();
        for (int rank = 0; rank < from.worldSize(); rank++) {
            if (r.nextBoolean()) {
                copies.put(rank, List.of(r.nextInt(12)));
            }
        }
        Plan plan = Planner.plan(from, to, copies);
        var full = ReferenceInterpreter.fullTensors(from, s.seed());
        var want = ReferenceInterpreter.shard(to, full);
        var got = ReferenceInterpreter.apply(plan, ReferenceInterpreter.shard(from, full), to);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), got.get(rank).get(e.getKey()).data(), s + " rank " + rank);
            }
        }
        for (ShardPlan sp : plan.shards()) {
            PlannerPropertiesTest.assertTiles(sp);
            for (Piece p : sp.pieces()) {
                int w = p.sourceDevice().worker();
                assertTrue(w == from.device(p.sourceRank()).worker() || copies.getOrDefault(p.sourceRank(), List.of())
                        .contains(w), p + " of " + sp.key());
                assertTrue(p.kind() != Piece.Kind.REMOTE || w != sp.destDevice().worker(), p.toString());
            }
        }
        assertTrue(busiest(plan) <= busiest(Planner.plan(from, to)) || !copies.isEmpty());
    }
}
