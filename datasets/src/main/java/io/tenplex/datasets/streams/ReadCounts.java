package io.tenplex.datasets.streams;

import java.util.LinkedHashMap;
import java.util.Map;

/** A histogram of how many batches samples were in: 0 to 15 exactly, then "16+". Not thread-safe. */
final class ReadCounts {
    static final int EXACT = 16;
    private final long[] counts = new long[EXACT + 1];

    void add(int reads) {
        counts[Math.min(reads, EXACT)]++;
    }

    /** Takes back one {@link #add} of {@code reads}. */
    void remove(int reads) {
        int i = Math.min(reads, EXACT);
        counts[i] = Math.max(0, counts[i] - 1);
    }

    /** Non-empty buckets, in order: {@code "0" -> n, ..., "16+" -> n}. */
    Map<String, Long> toMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (int i = 0; i <= EXACT; i++) {
            if (counts[i] > 0) {
                m.put(i == EXACT ? EXACT + "+" : Integer.toString(i), counts[i]);
            }
        }
        return m;
    }

    /** The counts of {@code samples}' reads. */
    static ReadCounts of(Iterable<Sample> samples) {
        ReadCounts c = new ReadCounts();
        samples.forEach(s -> c.add(s.reads()));
        return c;
    }
}
