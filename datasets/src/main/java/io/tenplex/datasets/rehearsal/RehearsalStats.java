package io.tenplex.datasets.rehearsal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one rank's rehearsal buffer did on this daemon since the job's buffer was configured here
 * (counts only grow; a re-partition keeps them): candidates inserted (appended to a class memory) and
 * those that replaced a representative, draws and the representatives they answered, how long draws
 * took (a histogram over {@link #DRAW_BUCKETS}), bytes of representatives fetched from other daemons
 * (for draws, and for a re-partition's new ranks), and what the trainer reported of its augments:
 * how many, how many had to wait for their draw and for how long. Thread-safe.
 */
public final class RehearsalStats {
    /** Upper bounds (seconds) of the draw latency histogram's buckets; a last one, +Inf, is implied. */
    public static final double[] DRAW_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

    private final AtomicLong inserts = new AtomicLong();
    private final AtomicLong replacements = new AtomicLong();
    private final AtomicLong draws = new AtomicLong();
    private final AtomicLong drawn = new AtomicLong();
    private final AtomicLong drawNanos = new AtomicLong();
    private final AtomicLongArray drawBuckets = new AtomicLongArray(DRAW_BUCKETS.length + 1);
    private final AtomicLong fetchedForDraws = new AtomicLong();
    private final AtomicLong fetchedForMoves = new AtomicLong();
    private final AtomicLong augments = new AtomicLong();
    private final AtomicLong augmentWaits = new AtomicLong();
    private final AtomicLong augmentWaitMicros = new AtomicLong();

    /** A snapshot; {@code drawBuckets[i]} counts draws of at most {@code DRAW_BUCKETS[i]} (cumulative; last: all). */
    public record Snapshot(long inserts, long replacements, long draws, long drawn, double drawSeconds,
            long[] drawBuckets, long fetchedForDraws, long fetchedForMoves, long augments, long augmentWaits,
            double augmentWaitSeconds) {
    }

    void offered(RankBuffer.Offered o) {
        inserts.addAndGet(o.appended());
        replacements.addAndGet(o.replaced());
    }

    void drew(int representatives, long nanos) {
        draws.incrementAndGet();
        drawn.addAndGet(representatives);
        drawNanos.addAndGet(nanos);
        double seconds = nanos / 1e9;
        int i = 0;
        while (i < DRAW_BUCKETS.length && seconds > DRAW_BUCKETS[i]) {
            i++;
        }
        drawBuckets.incrementAndGet(i);
    }

    void fetched(long bytes, boolean forDraw) {
        (forDraw ? fetchedForDraws : fetchedForMoves).addAndGet(bytes);
    }

    /** A trainer's augment: {@code waitedMicros} it waited for its draw (0: the draw was ready). */
    void augmented(long waitedMicros) {
        augments.incrementAndGet();
        if (waitedMicros > 0) {
            augmentWaits.incrementAndGet();
            augmentWaitMicros.addAndGet(waitedMicros);
        }
    }

    public Snapshot snapshot() {
        long[] cumulative = new long[drawBuckets.length()];
        long sum = 0;
        for (int i = 0; i < cumulative.length; i++) {
            sum += drawBuckets.get(i);
            cumulative[i] = sum;
        }
        return new Snapshot(inserts.get(), replacements.get(), draws.get(), drawn.get(), drawNanos.get() / 1e9,
                cumulative, fetchedForDraws.get(), fetchedForMoves.get(), augments.get(), augmentWaits.get(),
                augmentWaitMicros.get() / 1e6);
    }
}
