package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The table planner ({@link PlanBuilder}, {@link PlanTable}) makes exactly the choices of the object
 * planner it replaced ({@link LegacyPlanner}): the same shards, pieces, sources, replicas, padding and
 * report, for random models and configurations and for Megatron models with data-parallel replicas
 * on workers of 1 to 8 devices (where the balancing of remote pieces decides).
 */
class PlannerEquivalenceTest {
    private final PlannerPropertiesTest props = new PlannerPropertiesTest();

    @Provide
    net.jqwik.api.Arbitrary<PlannerPropertiesTest.Setup> setups() {
        return props.setups();
    }

    @Property(tries = 400)
    void sameChoices(@ForAll("setups") PlannerPropertiesTest.Setup s) {
        Model m = PlannerPropertiesTest.randomModel(s.seed());
        Ptc from;
        Ptc to;
        try {
            from = PlannerPropertiesTest.ptc(m, s.a(), s.ga(), s.wa());
            to = PlannerPropertiesTest.ptc(m, s.b(), s.gb(), s.wb());
        } catch (IllegalArgumentException e) {
            return;
        }
        same(LegacyPlanner.plan(from, to), Planner.plan(from, to));
    }

    @Test
    void megatron() {
        Model m = MegatronLayout.model(MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16), 2);
        ParallelConfig[][] pairs = {
            {ParallelConfig.of(2, 2, 4), ParallelConfig.of(2, 1, 8)},
            {ParallelConfig.of(2, 2, 4), ParallelConfig.of(4, 2, 2)},
            {ParallelConfig.of(4, 2, 2), ParallelConfig.of(2, 2, 4)},
            {ParallelConfig.of(2, 2, 2), ParallelConfig.of(2, 2, 8)},
        };
        for (ParallelConfig[] p : pairs) {
            for (int g : new int[] {1, 2, 4, 8}) {
                Ptc from = Ptc.packed(MegatronLayout.model(MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16), p[0].pp()), p[0], g);
                Ptc to = Ptc.packed(MegatronLayout.model(MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16), p[1].pp()), p[1], g);
                same(LegacyPlanner.plan(from, to), Planner.plan(from, to));
            }
        }
    }

    static void same(Plan want, Plan got) {
        assertEquals(want.report(), got.report());
        assertEquals(want.shards().size(), got.shards().size());
        for (int i = 0; i < want.shards().size(); i++) {
            ShardPlan a = want.shards().get(i);
            ShardPlan b = got.shards().get(i);
            assertEquals(a.destRank(), b.destRank());
            assertEquals(a.destDevice(), b.destDevice());
            assertEquals(a.tensor(), b.tensor());
            assertEquals(a.key(), b.key());
            assertEquals(a.shape(), b.shape());
            assertEquals(a.dtype(), b.dtype());
            assertEquals(a.padding(), b.padding(), a.key());
            assertEquals(a.pieces().size(), b.pieces().size(), a.key());
            for (int k = 0; k < a.pieces().size(); k++) {
                Piece x = a.pieces().get(k);
                Piece y = b.pieces().get(k);
                assertEquals(x.toString(), y.toString());
                assertEquals(x.kind(), y.kind());
                assertEquals(x.sourceRank(), y.sourceRank());
                assertEquals(x.sourceDevice(), y.sourceDevice());
                assertEquals(x.global(), y.global());
                assertEquals(x.bytes(), y.bytes());
                assertEquals(Arrays.toString(x.replicas()), Arrays.toString(y.replicas()));
            }
        }
        assertEquals(want.values(), got.values());
    }
}
