package io.tenplex.ptc.data;

/**
 * The global order of a dataset's samples: a permutation that depends only on the sample count, the
 * seed and the epoch, never on the data-parallel size or the progress.
 *
 * <p>The algorithm, exactly (so that other clients reproduce it; see docs/DATASETS.md): a SplitMix64
 * generator seeded with {@code seed + epoch} (64-bit wrap-around) and a Fisher–Yates shuffle of
 * {@code [0, 1, ..., n-1]} from the back:
 *
 * <pre>
 * state = seed + epoch
 * next():  state += 0x9E3779B97F4A7C15
 *          z = state
 *          z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9
 *          z = (z ^ (z >>> 27)) * 0x94D049BB133111EB
 *          return z ^ (z >>> 31)              (all arithmetic modulo 2^64)
 * for i = n-1 down to 1:
 *     j = next() mod (i + 1)                  (next() read as an unsigned 64-bit integer)
 *     swap order[i], order[j]
 * </pre>
 *
 * Without shuffling the order is the identity.
 */
public final class SampleOrder {
    private SampleOrder() {}

    public static int[] of(int n, long seed, int epoch, boolean shuffle) {
        if (n < 0) {
            throw new IllegalArgumentException("sample count " + n + " (expected: >= 0)");
        }
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        if (!shuffle) {
            return order;
        }
        long state = seed + epoch;
        for (int i = n - 1; i >= 1; i--) {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            z = z ^ (z >>> 31);
            int j = (int) Long.remainderUnsigned(z, i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }
}
