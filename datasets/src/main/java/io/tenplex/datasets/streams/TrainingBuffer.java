package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A policy's pure logic, not thread-safe: when a sample may be put, when a batch may be taken and
 * which samples it holds. {@link RankBuffer} serialises calls and makes callers wait.
 */
abstract class TrainingBuffer {
    final int capacity;
    final int threshold;
    final SplittableRandom random;
    /** Samples that left the buffer since the owner last cleared it (read for good, or evicted). */
    final List<Sample> left = new ArrayList<>();
    private boolean receptionOver;

    TrainingBuffer(int capacity, int threshold, long seed) {
        this.capacity = capacity;
        this.threshold = threshold;
        this.random = new SplittableRandom(seed);
    }

    /** A new, empty buffer of {@code spec}'s policy, capacity and threshold. */
    static TrainingBuffer of(StreamSpec spec, long seed) {
        return switch (spec.policy()) {
            case FIFO -> new FifoBuffer(spec.capacity());
            case FIRO -> new FiroBuffer(spec.capacity(), spec.threshold(), seed);
            case RESERVOIR -> new ReservoirBuffer(spec.capacity(), spec.threshold(), seed);
        };
    }

    /** Whether {@link #put} would take a sample now (else the producer waits). */
    abstract boolean canPut();

    /** Adds a sample; only when {@link #canPut()}. A seen sample it evicts goes to {@link #left}. */
    abstract void put(Sample s);

    /** Whether a batch of {@code n} can be taken now (at the end: whether any sample is left). */
    abstract boolean canTake(int n);

    /** A batch of at most {@code n} samples (fewer only once reception is over); only when {@link #canTake}. */
    abstract List<Sample> take(int n);

    /** How many samples it holds. */
    abstract int size();

    /** How many of them were never in a batch. */
    abstract int unseen();

    /** Adds a sample moved from another buffer, keeping its read count; may pass the capacity. */
    abstract void restore(Sample s);

    /**
     * Takes back a sample of a batch that never reached its reader (its read already undone):
     * answers whether it had left the buffer (else it is still held, e.g. a Reservoir's seen one).
     */
    abstract boolean giveBack(Sample s);

    /** The samples it holds now (a copy). */
    abstract List<Sample> held();

    /** Removes and returns every sample held (unseen first), for re-partitioning. */
    abstract List<Sample> drainAll();

    /** Production has ended: thresholds lift and the buffer drains. */
    void endReception() {
        receptionOver = true;
    }

    boolean receptionOver() {
        return receptionOver;
    }

    /** The threshold in force: 0 once reception is over. */
    int effectiveThreshold() {
        return receptionOver ? 0 : threshold;
    }

    /** Ended and empty: readers are told the stream is over. */
    boolean drained() {
        return receptionOver && size() == 0;
    }
}
