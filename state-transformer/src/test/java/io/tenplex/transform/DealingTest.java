package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/**
 * Dealing a run of equal reads per holder gives each holder what handing the reads out one at a time
 * to the least-loaded holder (ties to the lower worker) would; refining never makes the busiest
 * sender busier.
 */
class DealingTest {
    @Property(tries = 500)
    void dealingPerHolder_isTheGreedyPerRead(@ForAll @IntRange(min = 1, max = 9) int holders,
            @ForAll @IntRange(min = 0, max = 200) int reads, @ForAll @LongRange(min = 1, max = 1000) long bytes,
            @ForAll long seed) {
        Random r = new Random(seed);
        int[] workers = new int[holders];
        long[] sent = new long[holders + 3];
        for (int i = 0; i < holders; i++) {
            workers[i] = i + (i > 1 ? 2 : 0); // not every dense worker holds the run
        }
        for (int i = 0; i < sent.length; i++) {
            sent[i] = r.nextInt(4) * bytes + r.nextInt((int) Math.min(bytes * 3, 5000));
        }
        long[] greedy = sent.clone();
        long[] want = new long[holders];
        for (int k = 0; k < reads; k++) {
            int best = 0;
            for (int i = 1; i < holders; i++) {
                best = greedy[workers[i]] < greedy[workers[best]] ? i : best;
            }
            greedy[workers[best]] += bytes;
            want[best]++;
        }
        long[] got = Dealing.deal(sent, workers, reads, bytes);
        assertArrayEquals(want, got);
        assertArrayEquals(greedy, sent, "the loads after dealing");
    }

    /**
     * A run dealt over workers 0 and 1 (one read each), then a run only worker 0 holds (two reads):
     * worker 0 sends 30, worker 1 10. Refining moves the first run's read from worker 0 to worker 1:
     * both send 20, the least the busiest sender can send.
     */
    @Test
    void refining_movesReadsToLessBusyHolders() {
        long[] sent = new long[2];
        List<Dealing.Run> runs = new ArrayList<>();
        runs.add(new Dealing.Run(new int[] {0, 1}, 10, Dealing.deal(sent, new int[] {0, 1}, 2, 10)));
        runs.add(new Dealing.Run(new int[] {0}, 10, Dealing.deal(sent, new int[] {0}, 2, 10)));
        assertArrayEquals(new long[] {30, 10}, sent);
        Dealing.refine(sent, runs);
        assertArrayEquals(new long[] {20, 20}, sent);
        assertArrayEquals(new long[] {0, 2}, runs.get(0).counts(), "the first run's reads: both on worker 1");
    }

    @Test
    void readsWhoseBytesOverflow_areRefused() {
        assertThrows(IllegalArgumentException.class, () -> Dealing.deal(new long[1], new int[] {0}, 1L << 40,
                1L << 40));
    }
}
