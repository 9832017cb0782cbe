package io.tenplex.jobs.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The recovery of the benchmark's shape ({@code bench/netns-recover.sh}, L2): (T,P,D) = (2,2,1), rank r
 * on worker r, one partner copy each (worker w keeps worker w-1's rank), worker 3 lost, the new
 * (1,3,1) on workers 0..2, whose last stage holds the tied head filled from the word embeddings.
 */
class CopyRoutesTest {
    private final Model model = MegatronLayout.model(new MegatronLayout.Shape(6, 512, 8, 8, 2048, 16384, 512, 128,
            DType.F16, false, true)); // the benchmark's model (368 MiB of fp16 weights with Adam state)
    private final Ptc to = ptc(MegatronLayout.forStages(model, 3), ParallelConfig.of(1, 3, 1),
            List.of(new Device(0, 0), new Device(1, 0), new Device(2, 0)));
    /** Rank 3 (worker 3 lost) read from its copy on worker 0, the others from memory. */
    private final List<Device> found = List.of(new Device(0, 0), new Device(1, 0), new Device(2, 0), new Device(0, 4));
    /** The survivors' partner copies: rank 0 on worker 1, rank 1 on worker 2, rank 3 on worker 0. */
    private final Map<Integer, List<Integer>> copies = Map.of(0, List.of(1), 1, List.of(2), 3, List.of(0));

    private static Ptc ptc(Model m, ParallelConfig c, List<Device> devices) {
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), c.pp()), devices);
    }

    private Survivors.Sources sources(List<Device> devices) {
        Map<Integer, Survivors.Origin> origins = new TreeMap<>();
        for (int r = 0; r < 3; r++) {
            origins.put(r, new Survivors.Origin(r, Survivors.MEMORY, -1));
        }
        origins.put(3, new Survivors.Origin(0, Survivors.PARTNER, 3));
        return new Survivors.Sources(ptc(MegatronLayout.asSaved(model, 2), ParallelConfig.of(2, 2, 1), devices),
                "replicas/10", origins);
    }

    private long busiest(List<Device> devices) {
        return CopyRoutes.busiest(Planner.plan(sources(devices).from(), to));
    }

    @Test
    void readsSpreadOverTheCopies_theBusiestLinkIsTheBestAnyChoiceOfHoldersGives() {
        Survivors.Sources got = CopyRoutes.balance(sources(found), to, copies, 1);
        Plan plan = Planner.plan(got.from(), to);
        long before = busiest(found);
        long after = CopyRoutes.busiest(plan);
        // every choice of holder per rank, as the oracle
        long best = Long.MAX_VALUE;
        for (int mask = 0; mask < 8; mask++) {
            List<Device> d = new ArrayList<>(found);
            if ((mask & 1) != 0) {
                d.set(0, new Device(1, 1));
            }
            if ((mask & 2) != 0) {
                d.set(1, new Device(2, 2));
            }
            best = Math.min(best, busiest(d));
        }
        assertEquals(best, after, "busiest link after balancing, bytes");
        assertEquals(154, before >> 20, "MiB through the busiest link, every rank read where it was placed");
        assertEquals(140, after >> 20, "MiB through the busiest link, whole ranks read from the copies");
        // worker 2 reads rank 1 (its word embeddings fill the tied head) from its own copy, not from worker 1
        assertEquals("partner copy on worker 2 (read there to spread the load)", got.origins().get(1).toString());
        assertEquals(new Device(2, 2), got.from().device(1));
        Map<Integer, Long> sent = plan.report().sentByWorker();
        Map<Integer, Long> received = plan.report().receivedByWorker();
        for (int w = 0; w < 3; w++) {
            assertTrue(sent.getOrDefault(w, 0L) <= after && received.getOrDefault(w, 0L) <= after, "worker " + w);
        }
    }

    @Test
    void noCopies_leavesThePlacement() {
        Survivors.Sources s = sources(found);
        assertSame(s, CopyRoutes.balance(s, to, Map.of(), 1));
    }
}
