package io.tenplex.datasets.rehearsal;

/**
 * The shape of a job's rehearsal buffer, the same on every daemon of the job: {@code classes} (K)
 * class memories per rank of up to {@code perClass} (S) representatives each; a trainer offers each
 * sample of a minibatch of {@code batch} (b) samples with probability {@code candidates / batch}
 * (c / b); {@code seed} seeds the daemons' random choices (replacement and sampling), so that a run
 * with the same requests makes the same choices.
 */
public record RehearsalConfig(int classes, int perClass, int candidates, int batch, long seed) {
    public static final int MAX_CLASSES = 1 << 16;
    public static final int MAX_PER_CLASS = 1 << 20;
    /** The most representatives one rank may hold (K * S). */
    public static final long MAX_PER_RANK = 1L << 22;
    public static final int MAX_BATCH = 1 << 20;

    public RehearsalConfig {
        check("classes", classes, 1, MAX_CLASSES);
        check("perClass", perClass, 1, MAX_PER_CLASS);
        check("batch", batch, 1, MAX_BATCH);
        check("candidates", candidates, 0, batch);
        if ((long) classes * perClass > MAX_PER_RANK) {
            throw new IllegalArgumentException("classes " + classes + " x perClass " + perClass + " = "
                    + (long) classes * perClass + " representatives per rank (expected: at most " + MAX_PER_RANK + ")");
        }
    }

    /** The probability that a sample of a minibatch is offered as a candidate (c / b). */
    public double offerProbability() {
        return (double) candidates / batch;
    }

    private static void check(String name, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " " + v + " out of range (expected: " + min + " <= " + name
                    + " <= " + max + ")");
        }
    }
}
