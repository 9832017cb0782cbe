package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.reconfigure.FlowRates;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.transform.Plan;
import io.tenplex.transform.LocalPlanner;
import io.tenplex.transform.Piece;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ShardPlan;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FlowRatesTest {
    private static Ptc onePerWorker(Model m, ParallelConfig c) {
        List<Device> devices = new ArrayList<>();
        for (int r = 0; r < c.worldSize(); r++) {
            devices.add(new Device(r, 0));
        }
        return new Ptc(m, c, RankLayout.MEGATRON, StageMap.uniform(m.layers(), c.pp()), devices);
    }

    /** Bytes each destination worker reads from each other worker of the whole plan: {@code dest -> (source -> bytes)}. */
    private static Map<Integer, Map<Integer, Long>> flows(Plan plan) {
        Map<Integer, Map<Integer, Long>> byDest = new java.util.TreeMap<>();
        for (ShardPlan s : plan.shards()) {
            int dest = s.destDevice().worker();
            for (Piece p : s.pieces()) {
                int source = p.sourceDevice() != null ? p.sourceDevice().worker() : plan.sourceDevice(p.sourceRank()).worker();
                if (source != dest && p.kind() != Piece.Kind.KEEP) {
                    byDest.computeIfAbsent(dest, k -> new java.util.TreeMap<>()).merge(source, p.bytes(), Long::sum);
                }
            }
        }
        return byDest;
    }

    /** Every daemon paces its own flows from its own part: together they finish when the busiest link does. */
    @Test
    void everyFlowFinishesWithTheBusiestLink_andNoLinkIsAskedForMoreThanItCarries() {
        Model m = MegatronLayout.model(new MegatronLayout.Shape(4, 256, 4, 4, 1024, 4000, 512, 128, DType.F16, false,
                true));
        Ptc from = onePerWorker(m, ParallelConfig.of(4, 2, 1));
        Ptc to = onePerWorker(m, ParallelConfig.of(2, 2, 2));
        Plan plan = Planner.plan(from, to);
        long link = 100_000_000L;
        double usable = link / 8.0 * FlowRates.USABLE;
        Map<Integer, Map<Integer, Long>> flows = flows(plan);
        Map<Integer, Map<Integer, Long>> rates = new java.util.TreeMap<>(); // each daemon's own part's rates
        for (int w : flows.keySet()) {
            rates.put(w, FlowRates.ownRates(LocalPlanner.planFor(from, to, w), w, link));
        }
        assertEquals(flows.keySet(), rates.keySet());
        Map<Integer, Long> in = new HashMap<>();
        Map<Integer, Long> out = new HashMap<>();
        Map<Integer, Long> inBytes = new HashMap<>();
        Map<Integer, Long> outBytes = new HashMap<>();
        double finish = -1;
        for (var d : flows.entrySet()) {
            for (var f : d.getValue().entrySet()) {
                int dest = d.getKey();
                int source = f.getKey();
                assertTrue(source != dest);
                long rate = rates.get(dest).get(source);
                double t = f.getValue() / (double) rate;
                if (finish < 0) {
                    finish = t;
                }
                assertEquals(finish, t, finish * 1e-6 + 1e-6, "flow " + source + "->" + dest);
                in.merge(dest, rate, Long::sum);
                out.merge(source, rate, Long::sum);
                inBytes.merge(dest, f.getValue(), Long::sum);
                outBytes.merge(source, f.getValue(), Long::sum);
            }
        }
        long busiest = Math.max(inBytes.values().stream().mapToLong(Long::longValue).max().orElseThrow(),
                outBytes.values().stream().mapToLong(Long::longValue).max().orElseThrow());
        assertEquals(busiest / usable, finish, finish * 1e-6); // the busiest link's time at the usable rate
        for (long r : in.values()) {
            assertTrue(r <= usable + flows.size(), r + " into one worker");
        }
        for (long r : out.values()) {
            assertTrue(r <= usable + flows.size(), r + " out of one worker");
        }
        assertTrue(in.values().stream().anyMatch(r -> r > usable * 0.999)); // the busiest link is used fully
    }

    @Test
    void parsesRatesInTcUnits_andRefusesNonsense() {
        assertEquals(100_000_000L, FlowRates.parse("100mbit"));
        assertEquals(10_000_000_000L, FlowRates.parse("10gbit"));
        assertEquals(1_500_000_000L, FlowRates.parse("1.5GBIT"));
        assertEquals(25_000L, FlowRates.parse("25kbit"));
        assertEquals(12_345L, FlowRates.parse("12345"));
        for (String bad : new String[] {"fast", "0", "-5mbit", "mbit", "20000gbit", "NaN"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FlowRates.parse(bad));
            assertTrue(e.getMessage().contains("link rate"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> FlowRates.ownRates(null, 0, 0));
    }
}
