package io.tenplex.datasets.rehearsal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class GlobalSamplerTest {
    /** Buffers of unequal fill on three daemons: a sampler that chose a daemon first would be biased. */
    private static final List<GlobalSampler.Holding> HOLDINGS = List.of(
            new GlobalSampler.Holding(0, 0, new int[] {2, 0, 3}),
            new GlobalSampler.Holding(1, 1, new int[] {10, 10, 10}),
            new GlobalSampler.Holding(2, 2, new int[] {1, 1, 3}),
            new GlobalSampler.Holding(2, 3, new int[] {0, 0, 0}));

    @Test
    void pick_isUniformOverEveryRepresentative_chiSquare() {
        Random random = new Random(7);
        Map<GlobalSampler.Pick, Integer> seen = new TreeMap<>(java.util.Comparator.comparing(Object::toString));
        int draws = 4000;
        int r = 5;
        for (int i = 0; i < draws; i++) {
            List<GlobalSampler.Pick> picks = GlobalSampler.pick(HOLDINGS, r, random);
            assertEquals(r, new HashSet<>(picks).size(), "without replacement");
            picks.forEach(p -> seen.merge(p, 1, Integer::sum));
        }
        assertEquals(40, seen.size(), "every representative was picked");
        double expected = draws * r / 40.0;
        double chi2 = seen.values().stream().mapToDouble(n -> (n - expected) * (n - expected) / expected).sum();
        assertTrue(chi2 < 72.05, "chi-square " + chi2 + " over 39 degrees of freedom (p = 0.001 at 72.05)");
    }

    @Test
    void pick_slotsAreInsideTheirClassMemory_andFewerThanRGivesAll() {
        List<GlobalSampler.Pick> all = GlobalSampler.pick(HOLDINGS, 100, new Random(1));
        assertEquals(40, all.size());
        Set<GlobalSampler.Pick> distinct = new HashSet<>(all);
        assertEquals(40, distinct.size());
        for (GlobalSampler.Pick p : all) {
            int[] counts = HOLDINGS.stream().filter(h -> h.rank() == p.rank()).findFirst().orElseThrow().counts();
            assertTrue(p.slot() >= 0 && p.slot() < counts[p.cls()], p.toString());
        }
        assertEquals(List.of(), GlobalSampler.pick(List.of(), 3, new Random(1)));
    }
}
