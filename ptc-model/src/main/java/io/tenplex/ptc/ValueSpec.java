package io.tenplex.ptc;

/**
 * A non-tensor value of a rank's state (step, learning-rate scheduler, RNG state, args). It is
 * copied, never split, from a deterministic source rank: with {@code PER_POSITION}, the rank with the
 * same tensor and pipeline coordinates and data-parallel index 0 when those exist in the old
 * configuration, else rank 0; with {@code GLOBAL}, always rank 0.
 */
public record ValueSpec(String key, Scope scope) {
    /** Where a value comes from. */
    public enum Scope { PER_POSITION, GLOBAL }
}
