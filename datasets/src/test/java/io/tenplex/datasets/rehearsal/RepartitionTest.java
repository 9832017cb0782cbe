package io.tenplex.datasets.rehearsal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RepartitionTest {
    private static final List<GlobalSampler.Holding> FOUR = List.of(
            new GlobalSampler.Holding(0, 0, new int[] {4, 1, 0}),
            new GlobalSampler.Holding(1, 1, new int[] {4, 3, 2}),
            new GlobalSampler.Holding(2, 2, new int[] {4, 2, 0}),
            new GlobalSampler.Holding(3, 3, new int[] {4, 4, 1}));

    @Test
    void shrink_fourRanksToTwo_keepsPerClassBalance_noDuplicates_dropsOnlyWhatDoesNotFit() {
        Repartition.Plan p = Repartition.plan(FOUR, Map.of(0, 0, 1, 2), 4, new Random(3));
        assertEquals(Set.of(0, 1), p.ranks().keySet());
        Set<GlobalSampler.Pick> all = new HashSet<>();
        for (List<GlobalSampler.Pick> picks : p.ranks().values()) {
            int[] perClass = new int[3];
            picks.forEach(k -> perClass[k.cls()]++);
            assertEquals(4, perClass[0], "16 of class 0 do not fit in 2 x 4: each keeps S");
            assertEquals(4, perClass[1], "class 1: 10 held, 8 fit");
            assertTrue(perClass[2] == 1 || perClass[2] == 2, "class 2: 3 dealt 2 + 1");
            all.addAll(picks);
        }
        assertEquals(19, all.size(), "nothing taken twice");
    }

    @Test
    void grow_twoRanksToFour_dealsEvenly_keepsEverything() {
        List<GlobalSampler.Holding> two = List.of(new GlobalSampler.Holding(0, 0, new int[] {4, 3}),
                new GlobalSampler.Holding(1, 1, new int[] {4, 0}));
        Repartition.Plan p = Repartition.plan(two, Map.of(0, 0, 1, 1, 2, 2, 3, 3), 4, new Random(1));
        int total = 0;
        for (List<GlobalSampler.Pick> picks : p.ranks().values()) {
            assertEquals(2, picks.stream().filter(k -> k.cls() == 0).count());
            total += picks.size();
        }
        assertEquals(11, total);
        assertEquals(3, p.ranks().get(0).stream().filter(k -> k.source() == 0).count(), "its own daemon's first");
        assertEquals(6, p.moved(Map.of(0, 0, 1, 1, 2, 2, 3, 3)), "only what the new ranks' daemons lack crosses");
    }
}
