package io.tenplex.transform;

import java.util.List;

/**
 * Deals runs of equal remote reads over their holding workers by what each has sent, as a greedy
 * choice per read would, but computed per holder: a run of n reads of {@code bytes} each costs
 * O(holders x log(n x bytes)), however many reads it has.
 */
final class Dealing {
    /** A dealt run: its holding workers (dense, ascending), the bytes of each read, and the reads each serves. */
    record Run(int[] workers, long bytes, long[] counts) {}

    private Dealing() {
    }

    /**
     * Gives {@code n} reads of {@code bytes} each, one at a time, to the holder that has sent least
     * (ties to the lower worker), and adds them to {@code sent}: the reads taken are the n smallest
     * slots {@code (sent + k * bytes, worker)}, found by searching the level they reach.
     *
     * @return per holder (in {@code workers} order), the reads it serves
     */
    static long[] deal(long[] sent, int[] workers, long n, long bytes) {
        long lo = Long.MAX_VALUE;
        for (int w : workers) {
            lo = Math.min(lo, sent[w]);
        }
        long hi;
        try {
            hi = Math.addExact(lo, Math.multiplyExact(n, bytes));
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(n + " reads of " + bytes + " bytes each overflow what a worker can send");
        }
        while (lo < hi) { // the smallest level whose slots at or below it number at least n
            long mid = lo + (hi - lo) / 2;
            if (slotsUpTo(sent, workers, mid, bytes, n) >= n) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        long[] counts = new long[workers.length];
        long taken = 0;
        for (int i = 0; i < workers.length; i++) {
            long load = sent[workers[i]];
            counts[i] = load < lo ? (lo - load + bytes - 1) / bytes : 0; // slots below the level
            taken += counts[i];
        }
        for (int i = 0; i < workers.length && taken < n; i++) { // slots at the level, lower workers first
            long load = sent[workers[i]];
            if (load <= lo && (lo - load) % bytes == 0) {
                counts[i]++;
                taken++;
            }
        }
        for (int i = 0; i < workers.length; i++) {
            sent[workers[i]] += counts[i] * bytes;
        }
        return counts;
    }

    private static long slotsUpTo(long[] sent, int[] workers, long level, long bytes, long cap) {
        long n = 0;
        for (int w : workers) {
            if (sent[w] <= level) {
                n += (level - sent[w]) / bytes + 1;
                if (n >= cap) {
                    return n;
                }
            }
        }
        return n;
    }

    /**
     * Where holder sets overlap (partner copies; a replicated tensor beside split ones), runs dealt one
     * after another can leave a sender busier than needed: moves reads of a run from its busiest holder
     * to its least busy one while that lowers the busier of the two, for a few passes. The busiest
     * sender never gets busier.
     */
    static void refine(long[] sent, List<Run> runs) {
        for (int pass = 0; pass < 8; pass++) {
            boolean moved = false;
            for (Run run : runs) {
                int[] ws = run.workers();
                long[] c = run.counts();
                int hi = -1;
                int lo = 0;
                for (int i = 0; i < ws.length; i++) {
                    hi = c[i] > 0 && (hi < 0 || sent[ws[i]] > sent[ws[hi]]) ? i : hi;
                    lo = sent[ws[i]] < sent[ws[lo]] ? i : lo;
                }
                long k = hi < 0 ? 0 : Math.min(c[hi], (sent[ws[hi]] - sent[ws[lo]]) / (2 * run.bytes()));
                if (k > 0) {
                    c[hi] -= k;
                    c[lo] += k;
                    sent[ws[hi]] -= k * run.bytes();
                    sent[ws[lo]] += k * run.bytes();
                    moved = true;
                }
            }
            if (!moved) {
                return;
            }
        }
    }
}
