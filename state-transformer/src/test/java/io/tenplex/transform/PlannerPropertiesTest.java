package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Partition;
import io.tenplex.ptc.Placement;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.StageMap;
import io.tenplex.ptc.TensorSpec;
import io.tenplex.ptc.ValueSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Random models and random pairs of configurations (T, P, D, E, world sizes up to 64, every
 * dimension changing at once, redeployment to other workers): applying the plan to shards of random
 * tensors equals sharding them directly under the new configuration, bit for bit; pieces tile every
 * destination shard; cross-worker bytes meet the lower bound; identity moves nothing.
 */
class PlannerPropertiesTest {
    static final int LAYERS = 4;
    static final int EXPERTS = 4;

    record Setup(long seed, ParallelConfig a, int ga, int wa, ParallelConfig b, int gb, int wb) {
        @Override
        public String toString() {
            return a + " on " + ga + "/worker from w" + wa + " -> " + b + " on " + gb + "/worker from w" + wb
                    + " (model seed " + seed + ")";
        }
    }

    static Model randomModel(long seed) {
        Random r = new Random(seed);
        List<TensorSpec> t = new ArrayList<>();
        DType[] types = {DType.F32, DType.F16, DType.I8, DType.F64};
        t.add(new TensorSpec("embedding.weight", types[r.nextInt(4)], Shape.of(5 + r.nextInt(40), 1 + r.nextInt(3)),
                Placement.first(), new Partition.VocabSplit(0, 1 + r.nextInt(4))));
        for (int l = 0; l < LAYERS; l++) {
            String p = "layers." + l + ".";
            DType d = types[r.nextInt(4)];
            Placement at = Placement.layer(l);
            t.add(new TensorSpec(p + "col.weight", d, Shape.of(8L * (1 + r.nextInt(3)), 1 + r.nextInt(3)), at,
                    new Partition.Split(0, 1)));
            t.add(new TensorSpec(p + "row.weight", d, Shape.of(1 + r.nextInt(3), 8L * (1 + r.nextInt(3))), at,
                    new Partition.Split(1, 1)));
            t.add(new TensorSpec(p + "qkv.weight", d, Shape.of(24L * (1 + r.nextInt(2)), 2), at,
                    new Partition.Split(0, 3)));
            t.add(new TensorSpec(p + "norm.weight", d, Shape.of(1 + r.nextInt(5)), at, new Partition.Replicated()));
            t.add(new TensorSpec(p + "scalar", d, Shape.scalar(), at, new Partition.Replicated()));
            for (int e = 0; e < EXPERTS; e++) {
                t.add(new TensorSpec(p + "experts." + e + ".w", d, Shape.of(8, 2), at,
                        new Partition.Expert(e, EXPERTS, new Partition.Split(0, 1))));
            }
        }
        t.add(new TensorSpec("final_norm.weight", DType.F32, Shape.of(3), Placement.last(), new Partition.Replicated()));
        return new Model(t, List.of(new ValueSpec("iteration", ValueSpec.Scope.GLOBAL),
                new ValueSpec("rng", ValueSpec.Scope.PER_POSITION)), LAYERS);
    }

    @Provide
    Arbitrary<ParallelConfig> configs() {
        return Combinators.combine(Arbitraries.of(1, 2, 4, 8, 3, 6), Arbitraries.of(1, 2, 4, 3),
                Arbitraries.of(1, 2, 3, 4, 6, 8),
                Arbitraries.of(1, 2, 4)).as((tp, pp, dp, ep) -> new ParallelConfig(tp, pp, dp,
                        dp % ep == 0 ? ep : 1, false))
                .filter(c -> c.worldSize() <= 64);
    }

    @Provide
    Arbitrary<Setup> setups() {
        return Combinators.combine(Arbitraries.longs(), configs(), Arbitraries.of(1, 2, 3, 4, 8),
                Arbitraries.integers().between(0, 1), configs(), Arbitraries.of(1, 2, 3, 4, 8),
                Arbitraries.integers().between(0, 2)).as(Setup::new);
    }

    /** Builds the PTC, or returns null after checking the refusal is clear when the config cannot cut the model. */
    static Ptc ptcOrRefusal(Model m, ParallelConfig c, int perWorker, int firstWorker) {
        try {
            return ptc(m, c, perWorker, firstWorker);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains("cannot be split"), e.getMessage());
            assertTrue(c.tp() % 3 == 0 || c.pp() == 3, () -> c + " should be valid: " + e.getMessage());
            return null;
        }
    }

    static Ptc ptc(Model m, ParallelConfig c, int perWorker, int firstWorker) {
        List<Device> devices = new ArrayList<>();
        for (Device d : Ptc.packedDevices(c.worldSize(), perWorker)) {
            devices.add(new Device(d.worker() + firstWorker, d.local()));
        }
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(LAYERS, c.pp()), devices);
    }

    @Property(tries = 250)
    void applyingThePlan_equalsShardingDirectly(@ForAll("setups") Setup s) {
        Model m = randomModel(s.seed());
        Ptc from = ptcOrRefusal(m, s.a(), s.ga(), s.wa());
        Ptc to = ptcOrRefusal(m, s.b(), s.gb(), s.wb());
        if (from == null || to == null) {
            return; // refused with a clear message
        }
        Plan plan = Planner.plan(from, to);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, s.seed());
        var old = ReferenceInterpreter.shard(from, full);
        var want = ReferenceInterpreter.shard(to, full);
        var got = ReferenceInterpreter.apply(plan, old, to);
        for (int r = 0; r < to.worldSize(); r++) {
            int rank = r;
            assertEquals(want.get(rank).keySet(), got.get(rank).keySet(), "keys of rank " + rank);
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), got.get(rank).get(e.getKey()).data(),
                        () -> s + ": rank " + rank + " " + e.getKey());
            }
        }
        assertEquals(plan.report().lowerBound(), plan.report().interWorker(), "cross-worker bytes = lower bound");
        for (ShardPlan sp : plan.shards()) {
            assertTiles(sp);
        }
        assertEquals(to.worldSize() * m.values().size(), plan.values().size());
    }

    @Property(tries = 60)
    void identity_andRenumberingOnly_moveNothing(@ForAll("setups") Setup s) {
        Model m = randomModel(s.seed());
        Ptc ptc = ptcOrRefusal(m, s.a(), s.ga(), s.wa());
        if (ptc == null) {
            return;
        }
        Plan plan = Planner.plan(ptc, ptc);
        assertTrue(plan.isEmpty(), () -> plan.report().toString());
        assertTrue(plan.shards().stream().allMatch(sp -> sp.pieces().size() == 1
                && sp.pieces().get(0).kind() == Piece.Kind.KEEP && sp.padding().isEmpty()));
        assertEquals(0, plan.report().maxSent());
    }

    /** Pieces and padding cover the shard: volumes add up and no two overlap. */
    static void assertTiles(ShardPlan sp) {
        List<Region> parts = new ArrayList<>(sp.padding());
        for (Piece p : sp.pieces()) {
            parts.add(Region.at(p.destOffset(), p.source().shape().dims()));
        }
        long total = 0;
        for (int i = 0; i < parts.size(); i++) {
            Region a = parts.get(i);
            assertTrue(Region.whole(sp.shape()).contains(a), () -> a + " outside " + sp.shape());
            total += a.volume();
            for (int j = i + 1; j < parts.size(); j++) {
                Optional<Region> x = a.intersect(parts.get(j));
                assertTrue(x.isEmpty() || x.get().isEmpty(), () -> "pieces overlap in " + sp);
            }
        }
        assertEquals(sp.shape().volume(), total, () -> "gap in " + sp);
    }
}
