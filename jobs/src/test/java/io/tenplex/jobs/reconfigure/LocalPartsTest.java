package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ShardPlan;
import java.net.InetSocketAddress;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Every daemon building its own part from the change's definition ({@link LocalParts}) against the
 * coordinator's parts of the whole plan, on a GPT-shaped job: (2,4,4) on 4 devices per worker to
 * (2,2,8) on 2 per worker, so data-parallel replicas share workers and ranks move between them.
 */
class LocalPartsTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16);
    private static final ParallelConfig A = ParallelConfig.of(2, 4, 4);
    private static final ParallelConfig B = ParallelConfig.of(2, 2, 8);
    private static final long LINK = 10_000_000_000L;

    private static ChangeSpec spec(List<Device> from, List<Device> to) {
        Map<Integer, String> daemons = new TreeMap<>();
        from.forEach(d -> daemons.put(d.worker(), "10.0.0." + d.worker() + ":20010"));
        to.forEach(d -> daemons.put(d.worker(), "10.0.0." + d.worker() + ":20010"));
        List<Integer> participants = to.stream().map(Device::worker).distinct().sorted().toList();
        return new ChangeSpec("j", "r7", 30, "00".repeat(32), new ConfigJson.Placed(A, from),
                new ConfigJson.Placed(B, to), daemons, Map.of(), "gen/30", LINK, participants, "10.0.0.0:20010", 5000,
                List.of(), List.of());
    }

    @Test
    void eachDaemonsPart_isTheCoordinatorsPart_butForWhichReplicaServes() {
        Model model = MegatronLayout.model(GPT, 1);
        ChangeSpec spec = spec(Ptc.packedDevices(32, 4), Ptc.packedDevices(32, 2));
        Ptc from = ConfigJson.source(model, spec.from());
        Ptc to = ConfigJson.target(model, spec.to());
        var sources = PlanPartsTest.sources(from);
        Plan whole = Planner.plan(from, to);
        PlanPaths.Result bound = PlanPaths.bind(whole, sources);
        Map<Integer, InetSocketAddress> addresses = new TreeMap<>();
        spec.daemons().forEach((w, a) -> addresses.put(w, InetSocketAddress.createUnresolved(a.split(":")[0], 20010)));
        PlanParts.Header h = new PlanParts.Header("j", "r7", 30, addresses);
        Set<String> digests = new HashSet<>();
        long paced = 0;
        for (int w : spec.participants()) {
            LocalParts.Built mine = LocalParts.build(spec, model, w, sources);
            digests.add(mine.digest());
            PlanPart got = mine.part();
            PlanPart want = PlanParts.peerToPeer(h, w, bound.plan(), from.worldSize(), "gen/30", bound.generated());
            assertEquals(List.of(want.job(), want.planId(), want.worker(), want.step(), want.daemons(), want.sourceDir(),
                    want.values(), want.generated(), want.sourceDevices()), List.of(got.job(), got.planId(), got.worker(),
                    got.step(), got.daemons(), got.sourceDir(), got.values(), got.generated(), got.sourceDevices()));
            assertEquals(List.of(spec.participants(), "10.0.0.0:20010", "r7", 5000L), List.of(got.participants(),
                    got.coordinator(), got.reconfiguration(), got.preparedTimeoutMillis()));
            sameShards(want.shards(), got.shards(), w);
            for (long rate : got.flowRates().values()) {
                assertTrue(rate > 0 && rate <= LINK / 8 * FlowRates.USABLE, rate + " B/s from one worker");
                paced += rate;
            }
        }
        assertEquals(1, digests.size(), "every daemon planned the same change");
        assertTrue(paced > 0, "cross-worker flows are paced");
    }

    /**
     * A part planned ahead (from the change as known ahead: no layouts, step or id) is the part the
     * change would plan: the same shards, pieces and digest; a change of another placement plans anew.
     */
    @Test
    void aPartPlannedAhead_isThePartTheChangePlans_andOnlyForTheSameInputs() {
        Model model = MegatronLayout.model(GPT, 1);
        ChangeSpec spec = spec(Ptc.packedDevices(32, 4), Ptc.packedDevices(32, 2));
        Ptc from = ConfigJson.source(model, spec.from());
        Ptc to = ConfigJson.target(model, spec.to());
        var sources = PlanPartsTest.sources(from);
        Map<Integer, InetSocketAddress> addresses = new TreeMap<>();
        spec.daemons().forEach((w, a) -> addresses.put(w, InetSocketAddress.createUnresolved(a.split(":")[0], 20010)));
        ChangeSpec early = LocalDefinition.ahead("j", model, from, to, addresses);
        ChangeSpec known = new ChangeSpec(spec.job(), spec.changeId(), spec.step(), early.modelDigest(), spec.from(),
                spec.to(), spec.daemons(), spec.copies(), spec.sourceDir(), spec.linkRate(), spec.participants(),
                spec.coordinator(), spec.preparedTimeoutMillis(), spec.layoutDigests(), spec.rankLayouts());
        byte[] described = Descriptions.model(model);
        OwnPartsAhead ahead = new OwnPartsAhead();
        int w = spec.participants().get(1);
        assertEquals(List.of(early.modelDigest()), LocalParts.planAhead(early, d -> null, w, ahead).missing());
        var planned = LocalParts.planAhead(early, d -> d.equals(early.modelDigest()) ? described : null, w, ahead);
        LocalParts.Built fresh = LocalParts.build(known, model, w, sources);
        assertEquals(fresh.digest(), planned.planDigest());
        LocalParts.Built reused = LocalParts.build(known, model, w, sources, ahead);
        assertEquals(1, ahead.used());
        assertEquals(fresh.digest(), reused.digest());
        sameShards(fresh.part().shards(), reused.part().shards(), w);
        assertEquals(fresh.part().values(), reused.part().values());
        ChangeSpec other = new ChangeSpec(spec.job(), "r8", spec.step(), early.modelDigest(), spec.from(),
                new ConfigJson.Placed(B, Ptc.packedDevices(32, 4)), spec.daemons(), spec.copies(), spec.sourceDir(),
                spec.linkRate(), List.of(0, 1, 2, 3, 4, 5, 6, 7), spec.coordinator(), spec.preparedTimeoutMillis(),
                spec.layoutDigests(), spec.rankLayouts());
        LocalParts.build(other, model, 1, sources, ahead);
        assertEquals(1, ahead.used(), "another placement: planned anew");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LocalParts.planAhead(early, d -> described, 99,
                ahead)).getMessage().contains("not a participant"));
    }

    /** The same shards, paths and pieces; a remote piece read from one of its holders on another worker. */
    private static void sameShards(List<ShardPlan> want, List<ShardPlan> got, int worker) {
        assertEquals(want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            ShardPlan a = want.get(i);
            ShardPlan b = got.get(i);
            assertEquals(List.of(a.destRank(), a.key(), a.shape(), a.pieces().size()),
                    List.of(b.destRank(), b.key(), b.shape(), b.pieces().size()));
            for (int k = 0; k < a.pieces().size(); k++) {
                Piece p = a.pieces().get(k);
                Piece q = b.pieces().get(k);
                assertEquals(List.of(p.kind(), p.sourceKey(), p.global()), List.of(q.kind(), q.sourceKey(), q.global()));
                if (p.kind() == Piece.Kind.REMOTE) {
                    assertTrue(q.sourceDevice().worker() != worker && java.util.Arrays.stream(q.replicas())
                            .anyMatch(r -> r == q.sourceRank()), q.toString());
                } else {
                    assertEquals(p.sourceRank(), q.sourceRank());
                }
            }
        }
    }
}
