package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Every worker planning its own part ({@link LocalPlanner}) against the whole plan ({@link Planner}):
 * random models and pairs of configurations (T, P, D, E, redeployment), half with partner copies.
 * The parts together are the whole plan, shard for shard and piece for piece, except which holder
 * serves a remote piece; applied, they give every new rank its shards bit for bit; each part is the
 * same when planned again; and the report each part carries is the whole change's, agreeing with the
 * choices the parts made.
 */
class LocalPlannerTest {
    private final PlannerPropertiesTest props = new PlannerPropertiesTest();

    @Provide
    net.jqwik.api.Arbitrary<PlannerPropertiesTest.Setup> setups() {
        return props.setups();
    }

    static Map<Integer, List<Integer>> randomCopies(long seed, int ranks) {
        Random r = new Random(seed);
        Map<Integer, List<Integer>> copies = new HashMap<>();
        if (r.nextBoolean()) {
            for (int rank = 0; rank < ranks; rank++) {
                if (r.nextBoolean()) {
                    copies.put(rank, List.of(r.nextInt(12)));
                }
            }
        }
        return copies;
    }

    /** A random change of a random model, half with partner copies; null when a configuration cannot cut the model. */
    private record Change(Ptc from, Ptc to, Map<Integer, List<Integer>> copies) {
        static Change of(PlannerPropertiesTest.Setup s) {
            Model m = PlannerPropertiesTest.randomModel(s.seed());
            Ptc from = PlannerPropertiesTest.ptcOrRefusal(m, s.a(), s.ga(), s.wa());
            Ptc to = PlannerPropertiesTest.ptcOrRefusal(m, s.b(), s.gb(), s.wb());
            return from == null || to == null ? null : new Change(from, to, randomCopies(s.seed(), from.worldSize()));
        }
    }

    @Property(tries = 200)
    void partsTogether_areTheWholePlan(@ForAll("setups") PlannerPropertiesTest.Setup s) {
        Change c = Change.of(s);
        if (c == null) {
            return; // the configuration cannot cut the model: refused with a clear message
        }
        Ptc from = c.from();
        Ptc to = c.to();
        Map<Integer, List<Integer>> copies = c.copies();
        Plan whole = Planner.plan(from, to, copies);
        var full = ReferenceInterpreter.fullTensors(from, s.seed());
        var old = ReferenceInterpreter.shard(from, full);
        var want = ReferenceInterpreter.shard(to, full);
        Map<Integer, Long> sent = new HashMap<>();
        Map<Integer, Long> received = new HashMap<>();
        Set<String> digests = new HashSet<>();
        for (int w : whole.destWorkers()) {
            LocalPlanner.OwnPart own = LocalPlanner.part(from, to, copies, w);
            digests.add(own.digest());
            Plan part = own.plan();
            assertSameShards(s, whole.shardsOf(w), part.shards(), from, copies);
            assertEquals(sources(part), sources(LocalPlanner.planFor(from, to, copies, w)), "planned again, " + s);
            assertSameTotals(whole.report(), part.report(), s);
            var got = ReferenceInterpreter.apply(part, old, to);
            for (int rank : to.ranksOnWorker(w)) {
                for (var e : want.get(rank).entrySet()) {
                    assertArrayEquals(e.getValue().data(), got.get(rank).get(e.getKey()).data(), s + " rank " + rank);
                }
            }
            assertEquals(whole.values().stream().filter(v -> to.device(v.destRank()).worker() == w).toList(),
                    part.values());
            fetched(part, w, sent, received);
        }
        assertEquals(1, digests.size(), "every worker's digest of the change is the same: " + s);
        PlanReport any = LocalPlanner.planFor(from, to, copies, to.device(0).worker()).report();
        assertEquals(any.sentByWorker(), sent, "each worker's sent bytes are what the parts read from it, " + s);
        assertEquals(any.receivedByWorker(), received, s.toString());
    }

    /** Another placement of the new ranks, or a partner copy more, is another change: another digest. */
    @org.junit.jupiter.api.Test
    void digest_namesTheChange() {
        Model m = PlannerPropertiesTest.randomModel(7);
        Ptc from = PlannerPropertiesTest.ptc(m, io.tenplex.ptc.ParallelConfig.of(2, 2, 2), 2, 0);
        Ptc to = PlannerPropertiesTest.ptc(m, io.tenplex.ptc.ParallelConfig.of(1, 2, 4), 2, 0);
        Ptc moved = PlannerPropertiesTest.ptc(m, io.tenplex.ptc.ParallelConfig.of(1, 2, 4), 2, 1);
        String d = LocalPlanner.part(from, to, Map.of(), 0).digest();
        assertEquals(d, LocalPlanner.part(from, to, Map.of(), 3).digest());
        assertEquals(64, d.length());
        assertTrue(!d.equals(LocalPlanner.part(from, moved, Map.of(), 1).digest()));
        assertTrue(!d.equals(LocalPlanner.part(from, to, Map.of(0, List.of(5)), 0).digest()));
    }

    /**
     * Balance: the busiest sender of the parts sends at most one remote piece more than the whole
     * plan's busiest sender (a remote piece counted once per destination worker in both).
     */
    @Property(tries = 300)
    void busiestSender_asTheWholePlans(@ForAll("setups") PlannerPropertiesTest.Setup s) {
        Change c = Change.of(s);
        if (c == null) {
            return; // the configuration cannot cut the model: refused with a clear message
        }
        Ptc from = c.from();
        Ptc to = c.to();
        Map<Integer, List<Integer>> copies = c.copies();
        Plan whole = Planner.plan(from, to, copies);
        Map<Integer, Long> central = new HashMap<>();
        long largest = 0;
        for (int w : whole.destWorkers()) {
            fetched(new Plan(whole.from(), whole.to(), whole.shardsOf(w), List.of(), whole.report(), from.devices(),
                    to.devices(), Set.of()), w, central, new HashMap<>());
            for (ShardPlan sp : whole.shardsOf(w)) {
                for (Piece q : sp.pieces()) {
                    largest = Math.max(largest, q.kind() == Piece.Kind.REMOTE ? q.bytes() : 0);
                }
            }
        }
        long mostCentral = central.values().stream().mapToLong(Long::longValue).max().orElse(0);
        long mostLocal = LocalPlanner.planFor(from, to, copies, to.device(0).worker()).report().maxSent();
        assertTrue(mostLocal <= mostCentral + largest, mostLocal + " > " + mostCentral + " + " + largest + ": " + s);
    }

    /** The same shards and pieces, a remote piece read from one of its holders on another worker. */
    private static void assertSameShards(Object s, List<ShardPlan> want, List<ShardPlan> got, Ptc from,
            Map<Integer, List<Integer>> copies) {
        assertEquals(want.size(), got.size(), "shards of " + s);
        for (int i = 0; i < want.size(); i++) {
            ShardPlan a = want.get(i);
            ShardPlan b = got.get(i);
            assertEquals(List.of(a.destRank(), a.destDevice(), a.key(), a.shape(), a.dtype(), a.padding()),
                    List.of(b.destRank(), b.destDevice(), b.key(), b.shape(), b.dtype(), b.padding()), s.toString());
            assertEquals(a.pieces().size(), b.pieces().size(), a.key() + " of " + s);
            for (int k = 0; k < a.pieces().size(); k++) {
                Piece p = a.pieces().get(k);
                Piece q = b.pieces().get(k);
                assertEquals(List.of(p.kind(), p.sourceKey(), p.source(), p.global(), p.bytes()),
                        List.of(q.kind(), q.sourceKey(), q.source(), q.global(), q.bytes()), a.key() + " of " + s);
                assertArrayEquals(p.destOffset(), q.destOffset());
                assertArrayEquals(p.replicas(), q.replicas());
                if (p.kind() != Piece.Kind.REMOTE) {
                    assertEquals(p.sourceDevice(), q.sourceDevice(), q + " of " + a.key());
                    continue;
                }
                int w = q.sourceDevice().worker();
                assertTrue(java.util.Arrays.stream(q.replicas()).anyMatch(r -> r == q.sourceRank()), q.toString());
                assertTrue(w == from.device(q.sourceRank()).worker()
                        || copies.getOrDefault(q.sourceRank(), List.of()).contains(w), q + " of " + s);
                assertTrue(w != b.destDevice().worker(), q.toString());
            }
        }
    }

    private static void assertSameTotals(PlanReport want, PlanReport got, Object s) {
        assertEquals(List.of(want.onDevice(), want.intraWorker(), want.interWorker(), want.kept()),
                List.of(got.onDevice(), got.intraWorker(), got.interWorker(), got.kept()), s.toString());
        assertEquals(got.lowerBound(), got.interWorker());
    }

    /** Where every piece of a part is read. */
    static List<String> sources(Plan p) {
        return p.shards().stream().flatMap(s -> s.pieces().stream()).map(q -> q.sourceRank() + "@" + q.sourceDevice())
                .toList();
    }

    /** Adds what one part fetches from other workers: each distinct remote piece once. */
    private static void fetched(Plan part, int worker, Map<Integer, Long> sent, Map<Integer, Long> received) {
        Set<String> seen = new HashSet<>();
        for (ShardPlan s : part.shards()) {
            for (Piece q : s.pieces()) {
                if (q.kind() == Piece.Kind.REMOTE && q.bytes() > 0
                        && seen.add(s.tensor() + " " + q.sourceKey() + q.global() + java.util.Arrays.toString(q.replicas()))) {
                    sent.merge(q.sourceDevice().worker(), q.bytes(), Long::sum);
                    received.merge(worker, q.bytes(), Long::sum);
                }
            }
        }
    }
}
