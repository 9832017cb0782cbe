package io.tenplex.datasets.format;

import java.util.Arrays;

/** The samples found in a source: sample {@code i} is bytes {@code [begins[i], ends[i])}. */
public record Samples(long[] begins, long[] ends) {
    public Samples {
        if (begins.length != ends.length) {
            throw new IllegalArgumentException(begins.length + " begins but " + ends.length + " ends");
        }
    }

    public int count() {
        return begins.length;
    }

    /** {@code count} samples of {@code size} bytes each, the first at {@code start}. */
    static Samples fixed(long start, long size, int count) {
        long[] b = new long[count];
        long[] e = new long[count];
        for (int i = 0; i < count; i++) {
            b[i] = start + i * size;
            e[i] = b[i] + size;
        }
        return new Samples(b, e);
    }

    /** Collects samples one by one. */
    static final class Builder {
        private long[] b = new long[1024];
        private long[] e = new long[1024];
        private int n;

        void add(long begin, long end) {
            if (n == b.length) {
                b = Arrays.copyOf(b, n * 2);
                e = Arrays.copyOf(e, n * 2);
            }
            b[n] = begin;
            e[n++] = end;
        }

        Samples build() {
            return new Samples(Arrays.copyOf(b, n), Arrays.copyOf(e, n));
        }
    }
}
