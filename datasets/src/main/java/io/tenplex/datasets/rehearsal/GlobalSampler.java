package io.tenplex.datasets.rehearsal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * Uniform sampling without replacement from the union of rank buffers (section 5.3): every
 * representative held anywhere has the same chance to be among the r picked, whichever daemon, rank
 * and class holds it. From the per-class counts of every holding it draws r distinct positions among
 * all N representatives (Floyd's algorithm, O(r)) and maps each position to its holding, class and
 * slot. A pure function of its arguments.
 */
public final class GlobalSampler {
    /** The counts per class of one rank's buffer held by {@code source} (an index the caller gives meaning to). */
    public record Holding(int source, int rank, int[] counts) {
    }

    /** One representative picked: where it is held. */
    public record Pick(int source, int rank, int cls, int slot) {
    }

    private GlobalSampler() {
    }

    /** Up to {@code r} distinct representatives (all of them when fewer are held), in random order. */
    public static List<Pick> pick(List<Holding> holdings, int r, Random random) {
        long total = 0;
        long[] ends = new long[holdings.stream().mapToInt(h -> h.counts().length).sum()];
        int e = 0;
        for (Holding h : holdings) {
            for (int c : h.counts()) {
                total += c;
                ends[e++] = total;
            }
        }
        int n = (int) Math.min(r, total);
        List<Pick> picks = new ArrayList<>(n);
        for (long position : distinct(total, n, random)) {
            picks.add(locate(holdings, ends, position));
        }
        Collections.shuffle(picks, random);
        return picks;
    }

    /** {@code n} distinct numbers in [0, total), each n-subset equally likely (Floyd). */
    static List<Long> distinct(long total, int n, Random random) {
        Set<Long> chosen = new HashSet<>();
        List<Long> order = new ArrayList<>(n);
        for (long j = total - n; j < total; j++) {
            long t = random.nextLong(j + 1);
            Long pick = chosen.contains(t) ? j : t;
            chosen.add(pick);
            order.add(pick);
        }
        return order;
    }

    private static Pick locate(List<Holding> holdings, long[] ends, long position) {
        int lo = 0;
        int hi = ends.length - 1;
        while (lo < hi) { // the first (holding, class) whose end is past the position
            int mid = (lo + hi) >>> 1;
            if (ends[mid] > position) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        int flat = lo;
        for (Holding h : holdings) {
            if (flat < h.counts().length) {
                long start = ends[lo] - h.counts()[flat];
                return new Pick(h.source(), h.rank(), flat, (int) (position - start));
            }
            flat -= h.counts().length;
        }
        throw new IllegalStateException("position " + position + " past the end");
    }
}
