package io.tenplex.jobs.recovery;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which surviving worker each lost rank is read from when several hold a complete copy of it (L2
 * partner copies, {@code partners} >= 2): the ranks, largest first, each to the holder of a copy
 * that serves the fewest bytes so far (ties: the first partner in the ring), so the reads of a lost
 * worker's ranks are spread over every holder of a copy instead of all going through its first
 * partner.
 */
final class CopyReads {
    private CopyReads() {
    }

    /**
     * @param holders per lost rank, the surviving workers holding a complete copy, in ring order (non-empty)
     * @param bytes per lost rank, its bytes (from its seal manifest)
     * @return per lost rank, the worker it is read from
     */
    static Map<Integer, Integer> assign(Map<Integer, List<Integer>> holders, Map<Integer, Long> bytes) {
        List<Integer> ranks = new ArrayList<>(holders.keySet());
        ranks.sort(Comparator.comparingLong((Integer r) -> -bytes.getOrDefault(r, 0L)).thenComparing(r -> r));
        Map<Integer, Long> served = new HashMap<>();
        Map<Integer, Integer> out = new TreeMap<>();
        for (int r : ranks) {
            List<Integer> candidates = holders.get(r);
            if (candidates.isEmpty()) {
                throw new IllegalArgumentException("rank " + r + " has no holder of a copy");
            }
            int best = candidates.get(0);
            for (int w : candidates) {
                if (served.getOrDefault(w, 0L) < served.getOrDefault(best, 0L)) {
                    best = w;
                }
            }
            served.merge(best, bytes.getOrDefault(r, 0L), Long::sum);
            out.put(r, best);
        }
        return out;
    }
}
