package io.tenplex.ptc;

/**
 * A non-tensor value of a rank's state (step, learning-rate scheduler, RNG state, args). It is
 * copied, never split, from a deterministic source rank: with {@code PER_POSITION}, the rank with the
 * same tensor and pipeline coordinates and data-parallel index 0 when those exist in the old
 * configuration, else rank 0; with {@code PER_DATA_RANK}, the rank with the same tensor, pipeline and
 * data-parallel coordinates when they exist in the old configuration (a value that differs per
 * data-parallel rank, such as RNG state, stays with its rank), else the one with data-parallel index 0
 * (then rank 0); with {@code GLOBAL}, always rank 0.
 */
public record ValueSpec(String key, Scope scope) {
    /** Where a value comes from. */
    public enum Scope { PER_POSITION, PER_DATA_RANK, GLOBAL }
}
