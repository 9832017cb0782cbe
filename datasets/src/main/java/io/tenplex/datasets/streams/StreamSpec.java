package io.tenplex.datasets.streams;

/**
 * What a job's stream is: each rank's buffer policy, capacity (samples) and threshold, the largest
 * sample taken, how many producers will close it (0: only an explicit end), the random seed, and
 * whether producers' keys pick the rank (else round robin).
 *
 * @param capacity samples per rank's buffer, 1..{@link #MAX_CAPACITY}
 * @param threshold samples a FIFO ignores; FIRO and Reservoir draw only above it (0..capacity-1)
 * @param maxSampleBytes the largest sample accepted, 1..{@link #MAX_SAMPLE_BYTES}; a push above it is 413
 * @param producers closes that end production (0: production ends only by an explicit end)
 */
public record StreamSpec(Policy policy, int capacity, int threshold, int maxSampleBytes, int producers, long seed) {
    /** The most samples one rank's buffer may hold. */
    public static final int MAX_CAPACITY = 1 << 22;
    /** The largest sample any stream takes (a control body is at most 16 MiB by default). */
    public static final int MAX_SAMPLE_BYTES = 8 << 20;
    /** The most bytes one rank's buffer may hold when full of its largest samples. */
    public static final long MAX_BUFFER_BYTES = 4L << 30;

    public StreamSpec {
        if (policy == null) {
            throw new IllegalArgumentException("a stream needs a policy (fifo, firo or reservoir)");
        }
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity " + capacity + " (expected: 1 <= capacity <= " + MAX_CAPACITY
                    + ")");
        }
        if (threshold < 0 || threshold >= capacity) {
            throw new IllegalArgumentException("threshold " + threshold + " (expected: 0 <= threshold < capacity "
                    + capacity + ")");
        }
        if (maxSampleBytes < 1 || maxSampleBytes > MAX_SAMPLE_BYTES) {
            throw new IllegalArgumentException("max sample bytes " + maxSampleBytes + " (expected: 1 <= bytes <= "
                    + MAX_SAMPLE_BYTES + ")");
        }
        if ((long) capacity * maxSampleBytes > MAX_BUFFER_BYTES) {
            throw new IllegalArgumentException("capacity " + capacity + " x max sample bytes " + maxSampleBytes
                    + " is over " + MAX_BUFFER_BYTES + " bytes per rank");
        }
        if (producers < 0) {
            throw new IllegalArgumentException("producers " + producers + " (expected: >= 0)");
        }
    }
}
