package io.tenplex.datasets.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Each policy against Melissa's definitions (section 3.2.3, Algorithm 1). */
class TrainingBufferTest {
    private static StreamSpec spec(Policy p, int capacity, int threshold) {
        return new StreamSpec(p, capacity, threshold, 1024, 0, 7);
    }

    private static Sample sample(long id) {
        return new Sample(id, new byte[] {(byte) id}, 0);
    }

    private static List<Long> ids(List<Sample> batch) {
        return batch.stream().map(Sample::id).toList();
    }

    @Test
    void fifo_readsInArrivalOrder_eachOnce_andPutsWaitWhileFull() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.FIFO, 4, 0), 1);
        for (long i = 0; i < 4; i++) {
            assertTrue(b.canPut());
            b.put(sample(i));
        }
        assertFalse(b.canPut());
        assertTrue(b.canTake(3));
        assertEquals(List.of(0L, 1L, 2L), ids(b.take(3)));
        assertFalse(b.canTake(2)); // one left: a batch of 2 waits until production ends
        b.endReception();
        assertTrue(b.canTake(2));
        assertEquals(List.of(3L), ids(b.take(2)));
        assertTrue(b.drained());
    }

    @Test
    void firo_drawsOnlyAboveTheThreshold_randomOrder_eachOnce_untilDrained() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.FIRO, 100, 10), 1);
        for (long i = 0; i < 14; i++) {
            b.put(sample(i));
        }
        assertFalse(b.canTake(5)); // 14 < threshold 10 + 5
        b.put(sample(14));
        assertTrue(b.canTake(5));
        Set<Long> read = new HashSet<>(ids(b.take(5)));
        assertFalse(b.canTake(1)); // 10 left: not above the threshold
        b.endReception();
        while (!b.drained()) {
            for (long id : ids(b.take(4))) {
                assertTrue(read.add(id), "read twice: " + id);
            }
        }
        assertEquals(15, read.size());
        assertTrue(read.containsAll(List.of(0L, 14L)));
    }

    @Test
    void firo_orderIsNotArrivalOrder() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.FIRO, 1000, 0), 3);
        for (long i = 0; i < 1000; i++) {
            b.put(sample(i));
        }
        List<Long> got = ids(b.take(1000));
        assertEquals(1000, new HashSet<>(got).size());
        assertFalse(got.equals(new ArrayList<>(new java.util.TreeSet<>(got))));
    }

    @Test
    void reservoir_movesDrawnUnseenToSeen_evictsOnlySeen_andBlocksPutsOnlyWhenFullOfUnseen() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.RESERVOIR, 4, 1), 1);
        b.put(sample(0));
        assertFalse(b.canTake(1)); // population 1 is not above threshold 1
        for (long i = 1; i < 4; i++) {
            b.put(sample(i));
        }
        assertFalse(b.canPut()); // full of unseen samples
        List<Sample> batch = b.take(2);
        int seen = b.size() - b.unseen();
        assertEquals(new HashSet<>(ids(batch)).size(), seen);
        assertTrue(b.canPut());
        assertEquals(4, b.size());
        b.put(sample(4)); // evicts one seen sample
        assertEquals(4, b.size());
        assertEquals(1, b.left.size());
        assertTrue(ids(batch).contains(b.left.get(0).id()));
        assertTrue(b.canTake(100)); // reads never block past the threshold
        assertEquals(100, b.take(100).size()); // with replacement
    }

    @Test
    void reservoir_drawsUniformlyAmongSeenAndUnseen() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.RESERVOIR, 10, 0), 11);
        for (long i = 0; i < 10; i++) {
            b.put(sample(i));
        }
        Map<Long, Integer> counts = new HashMap<>();
        int draws = 100_000;
        for (Sample s : b.take(draws)) {
            counts.merge(s.id(), 1, Integer::sum);
        }
        double chi2 = 0;
        for (long i = 0; i < 10; i++) {
            double d = counts.getOrDefault(i, 0) - draws / 10.0;
            chi2 += d * d / (draws / 10.0);
        }
        assertTrue(chi2 < 27.88, "chi-square " + chi2 + " over 9 degrees of freedom (p = 0.001)");
    }

    @Test
    void reservoir_afterReceptionEnds_drainsEachSampleOnceMore() {
        TrainingBuffer b = TrainingBuffer.of(spec(Policy.RESERVOIR, 8, 2), 5);
        for (long i = 0; i < 8; i++) {
            b.put(sample(i));
        }
        b.take(5);
        b.endReception();
        Set<Long> last = new HashSet<>();
        while (!b.drained()) {
            for (long id : ids(b.take(3))) {
                assertTrue(last.add(id), "drawn twice after the end: " + id);
            }
        }
        assertEquals(8, last.size());
        assertEquals(8, b.left.size());
    }
}
