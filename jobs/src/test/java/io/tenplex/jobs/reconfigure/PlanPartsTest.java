package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.StoreException;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ShardPlan;
import io.tenplex.transform.ValueCopy;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The coordinator builds each worker's part from that worker's shards only ({@link Plan#shardsOf}),
 * bound when read: the parts are exactly those of the way before, which bound every shard at once
 * and filtered the whole plan for each worker (kept below), on a mid-size change of a GPT-shaped job.
 */
class PlanPartsTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(8, 256, 8, 1000, 16);
    private static final ParallelConfig A = ParallelConfig.of(2, 4, 4);
    private static final ParallelConfig B = ParallelConfig.of(2, 2, 8);

    private static Ptc ptc(ParallelConfig c) {
        return Ptc.packed(MegatronLayout.model(GPT, c.pp()), c, 4);
    }

    /** Every old rank's flat tree, listed as a daemon lists it (each rank its own strings). */
    static Map<Integer, CheckpointLayout> sources(Ptc from) {
        Map<Integer, CheckpointLayout> out = new TreeMap<>();
        for (int r = 0; r < from.worldSize(); r++) {
            List<CheckpointLayout.Item> items = new ArrayList<>();
            for (Ptc.Shard s : from.shards(r)) {
                items.add(new CheckpointLayout.Item(new String(s.key()), true, s.shape().rank()));
            }
            for (ValueSpec v : from.model().values()) {
                items.add(new CheckpointLayout.Item(v.key(), false, 0));
            }
            items.add(new CheckpointLayout.Item("rng_state", false, 0)); // undeclared: carried to every new rank
            out.put(r, CheckpointLayout.of(items));
        }
        return out;
    }

    @Test
    void peerToPeerParts_areThoseOfTheWholePlanFiltered() {
        Ptc from = ptc(A);
        Plan plan = Planner.plan(from, ptc(B));
        PlanPaths.Result bound = PlanPaths.bind(plan, sources(from));
        List<ShardPlan> all = List.copyOf(bound.plan().shards());
        PlanParts.Header h = new PlanParts.Header("j", "p1", 5, Map.of(0, InetSocketAddress.createUnresolved("a", 1)));
        int parts = 0;
        for (int w : bound.plan().destWorkers()) {
            PlanPart got = PlanParts.peerToPeer(h, w, bound.plan(), from.worldSize(), "save", bound.generated());
            PlanPart want = legacyPeerToPeer(h, w, bound.plan(), all, from.worldSize(), bound.generated());
            same(want, got);
            assertTrue(got.values().stream().anyMatch(v -> v.key().equals("rng_state")), "undeclared values carried");
            parts++;
        }
        assertEquals(8, parts);
    }

    @Test
    void centralParts_areThoseOfTheWholePlanFiltered() {
        Ptc from = ptc(A);
        Plan plan = Planner.plan(from, ptc(B));
        PlanPaths.Result bound = PlanPaths.bind(plan, sources(from));
        List<ShardPlan> all = List.copyOf(bound.plan().shards());
        PlanParts.Header h = new PlanParts.Header("j", "p1", 5, Map.of(0, InetSocketAddress.createUnresolved("a", 1)));
        for (int w : bound.plan().destWorkers()) {
            PlanPart got = PlanParts.fromCentral(h, "p1-c", w, 0, bound.plan(), bound.generated());
            assertEquals(all.get(all.size() - 1).destRank() + 1, got.sourceDevices().size());
            assertEquals(all.stream().filter(s -> s.destDevice().worker() == w).map(ShardPlan::key).toList(),
                    got.shards().stream().map(ShardPlan::key).toList());
        }
    }

    @Test
    void ranksThatSavedTheSameTree_shareOneLayout() throws Exception {
        Ptc from = ptc(A);
        Map<Integer, CheckpointLayout> listed = SavedTrees.list(listing(from), new io.tenplex.jobs.common
                .JobLayout("j"), holders(from));
        assertEquals(from.worldSize(), listed.size());
        assertSame(listed.get(0), listed.get(1), "tensor-parallel ranks of a stage");
        assertSame(listed.get(0), listed.get(2), "data-parallel ranks of a stage");
        assertEquals(3, new java.util.IdentityHashMap<CheckpointLayout, Boolean>() { {
                listed.values().forEach(l -> put(l, true));
            } }.size(), "the first stage, the middle ones (the same local names), the last");
    }

    @Test
    void aPartThatCannotFitTheHeap_isRefusedWithItsSizes() {
        Plan plan = Planner.plan(ptc(A), ptc(B));
        long total = plan.pieceCount();
        long central = PlanHeap.need(total, total, A.dp()); // one part: nothing else waits to be sent
        assertEquals(total * (PlanHeap.PER_PIECE + PlanHeap.PER_REPLICA * A.dp()), central);
        PlanHeap.check(plan, 0, central * 4 + 4);
        StoreException e = assertThrows(StoreException.class, () -> PlanHeap.check(plan, 0, central * 4 - 4));
        assertEquals(StoreException.Kind.TOO_LARGE, e.kind());
        assertTrue(e.getMessage().contains("(" + total + " pieces) needs about "), e.getMessage());
        assertTrue(e.getMessage().contains("central worker 0: " + total + " pieces, each with up to 4 replicas"),
                e.getMessage());
        assertTrue(e.getMessage().contains("it may take; nothing was started. Reconfigure peer to peer"), e.getMessage());
        long largest = plan.destWorkers().stream().mapToLong(plan::pieceCountOf).max().orElseThrow();
        long peer = PlanHeap.need(largest, total, A.dp());
        assertTrue(peer < central, peer + " < " + central);
        PlanHeap.check(plan, -1, peer * 4 + 4);
        StoreException p = assertThrows(StoreException.class, () -> PlanHeap.check(plan, -1, peer * 4 - 4));
        assertTrue(p.getMessage().contains("for its largest part (destination worker "), p.getMessage());
        assertEquals(Long.MAX_VALUE, PlanHeap.need(Long.MAX_VALUE / 2, Long.MAX_VALUE, 64));
    }

    /** Daemons that list each old rank's flat tree (fresh strings per listing, as parsed from an answer). */
    private static io.tenplex.jobs.common.DaemonClient listing(Ptc from) {
        return (io.tenplex.jobs.common.DaemonClient) java.lang.reflect.Proxy.newProxyInstance(
                PlanPartsTest.class.getClassLoader(), new Class<?>[] {io.tenplex.jobs.common.DaemonClient.class},
                (proxy, method, args) -> {
                    if (!method.getName().equals("listTree")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    String dir = args[1].toString();
                    int rank = Integer.parseInt(dir.substring(dir.lastIndexOf('/') + 1));
                    List<io.tenplex.jobs.common.DaemonClient.TreeEntry> out = new ArrayList<>();
                    for (Ptc.Shard s : from.shards(rank)) {
                        out.add(new io.tenplex.jobs.common.DaemonClient.TreeEntry(dir + "/" + s.key(), true,
                                s.shape().rank()));
                    }
                    return java.util.concurrent.CompletableFuture.completedFuture(out);
                });
    }

    private static Map<Integer, InetSocketAddress> holders(Ptc from) {
        Map<Integer, InetSocketAddress> out = new TreeMap<>();
        for (int r = 0; r < from.worldSize(); r++) {
            out.put(r, InetSocketAddress.createUnresolved("worker" + from.device(r).worker(), 1));
        }
        return out;
    }

    private static void same(PlanPart want, PlanPart got) {
        assertEquals(want.shards().size(), got.shards().size());
        for (int i = 0; i < want.shards().size(); i++) {
            assertEquals(describe(want.shards().get(i)), describe(got.shards().get(i)));
        }
        assertEquals(want.values(), got.values());
        assertEquals(want.generated(), got.generated());
        assertEquals(want.sourceDevices(), got.sourceDevices());
        assertEquals(want.daemons(), got.daemons());
    }

    private static String describe(ShardPlan s) {
        StringBuilder b = new StringBuilder().append(s.destRank()).append(' ').append(s.destDevice()).append(' ')
                .append(s.key()).append(' ').append(s.shape()).append(' ').append(s.dtype()).append(' ')
                .append(s.padding());
        for (Piece p : s.pieces()) {
            b.append("\n  ").append(p).append(' ').append(p.sourceDevice()).append(' ').append(p.global()).append(' ')
                    .append(p.bytes()).append(' ').append(Arrays.toString(p.replicas()));
        }
        return b.toString();
    }

    /** How the coordinator built a worker's part before: the whole bound plan filtered by worker. */
    private static PlanPart legacyPeerToPeer(PlanParts.Header h, int worker, Plan plan, List<ShardPlan> all,
            int sourceRanks, Map<Integer, Map<String, String>> generated) {
        List<ShardPlan> shards = new ArrayList<>();
        Set<Integer> ranks = new HashSet<>();
        for (ShardPlan s : all) {
            if (s.destDevice().worker() == worker) {
                shards.add(s);
                ranks.add(s.destRank());
            }
        }
        List<PlanPart.Value> values = new ArrayList<>();
        for (ValueCopy v : plan.values()) {
            if (ranks.contains(v.destRank())) {
                values.add(new PlanPart.Value(v.destRank(), v.key(), v.sourceRank()));
            }
        }
        List<PlanPart.Generated> files = new ArrayList<>();
        generated.forEach((rank, f) -> {
            if (ranks.contains(rank)) {
                f.forEach((path, content) -> files.add(new PlanPart.Generated(rank, path, content)));
            }
        });
        List<Device> sources = new ArrayList<>();
        for (int r = 0; r < sourceRanks; r++) {
            sources.add(plan.sourceDevice(r));
        }
        return h.part(worker, "save", "", shards, values, files, sources);
    }
}
