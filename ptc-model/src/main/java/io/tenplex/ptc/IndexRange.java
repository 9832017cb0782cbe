package io.tenplex.ptc;

import java.util.Optional;

/** A half-open range {@code [start, stop)} of indices along one dimension, with {@code 0 <= start <= stop}. */
public record IndexRange(long start, long stop) {

    public IndexRange {
        if (start < 0 || stop < start) {
            throw new IllegalArgumentException("invalid range " + start + ":" + stop
                    + " (expected: 0 <= start <= stop)");
        }
    }

    public static IndexRange of(long start, long stop) {
        return new IndexRange(start, stop);
    }

    /** The whole dimension {@code [0, size)}. */
    public static IndexRange all(long size) {
        return new IndexRange(0, size);
    }

    public long size() {
        return stop - start;
    }

    public boolean isEmpty() {
        return stop == start;
    }

    public boolean contains(long index) {
        return index >= start && index < stop;
    }

    /** True when every index of {@code other} is in this range (an empty range is contained everywhere it starts). */
    public boolean contains(IndexRange other) {
        return other.start >= start && other.stop <= stop;
    }

    /** The common part, or empty when the ranges do not overlap (touching ranges do not overlap). */
    public Optional<IndexRange> intersect(IndexRange other) {
        long s = Math.max(start, other.start);
        long e = Math.min(stop, other.stop);
        return s < e ? Optional.of(new IndexRange(s, e)) : Optional.empty();
    }

    /** This range moved by {@code delta}; the result must stay non-negative. */
    public IndexRange shift(long delta) {
        long s = start + delta;
        if (s < 0) {
            throw new IllegalArgumentException("shifting range " + this + " by " + delta + " gives a negative start " + s);
        }
        return new IndexRange(s, stop + delta);
    }

    /** The wire form {@code start:stop}. */
    @Override
    public String toString() {
        return start + ":" + stop;
    }
}
