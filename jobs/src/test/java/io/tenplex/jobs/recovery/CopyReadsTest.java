package io.tenplex.jobs.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** A lost worker's ranks are read from every holder of a copy, balanced by bytes. */
class CopyReadsTest {
    /** The bytes each worker serves under an assignment. */
    private static Map<Integer, Long> bytesPerSource(Map<Integer, Integer> assigned, Map<Integer, Long> bytes) {
        Map<Integer, Long> out = new TreeMap<>();
        assigned.forEach((rank, worker) -> out.merge(worker, bytes.get(rank), Long::sum));
        return out;
    }

    @Test
    void fourRanks_twoHoldersOfEveryCopy_eachServesHalf() {
        Map<Integer, Long> bytes = Map.of(12, 100L, 13, 80L, 14, 60L, 15, 40L);
        Map<Integer, List<Integer>> holders = Map.of(12, List.of(0, 1), 13, List.of(0, 1), 14, List.of(0, 1), 15,
                List.of(0, 1));
        Map<Integer, Integer> got = CopyReads.assign(holders, bytes);
        assertEquals(Map.of(0, 140L, 1, 140L), bytesPerSource(got, bytes)); // the first partner alone: 280 and 0
        assertEquals(Map.of(12, 0, 13, 1, 14, 1, 15, 0), got);
    }

    @Test
    void unevenRanks_threeHolders_theLargestServedAlone() {
        Map<Integer, Long> bytes = Map.of(0, 123L, 1, 63L, 2, 63L, 3, 10L);
        List<Integer> all = List.of(4, 5, 6);
        Map<Integer, List<Integer>> holders = Map.of(0, all, 1, all, 2, all, 3, all);
        assertEquals(Map.of(4, 123L, 5, 73L, 6, 63L), bytesPerSource(CopyReads.assign(holders, bytes), bytes));
    }

    @Test
    void aCopyOnOneHolderOnly_isReadThere_andTheOthersBalanceAroundIt() {
        Map<Integer, Long> bytes = Map.of(6, 50L, 7, 50L);
        Map<Integer, List<Integer>> holders = Map.of(6, List.of(1), 7, List.of(1, 2));
        assertEquals(Map.of(6, 1, 7, 2), CopyReads.assign(holders, bytes));
    }

    @Test
    void oneHolder_isTheFirstPartner_asBefore() {
        assertEquals(Map.of(3, 0), CopyReads.assign(Map.of(3, List.of(0)), Map.of(3, 98L)));
    }

    @Test
    void aRankWithoutHolders_isRefused() {
        assertThrows(IllegalArgumentException.class, () -> CopyReads.assign(Map.of(3, List.of()), Map.of(3, 1L)));
    }
}
