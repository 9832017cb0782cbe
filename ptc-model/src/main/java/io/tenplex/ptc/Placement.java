package io.tenplex.ptc;

/**
 * Which pipeline stage holds a tensor: the stage of a transformer layer, the first stage
 * (embeddings), or the last stage (final norm, heads).
 */
public record Placement(int layer, Kind kind) {
    /** Where in the pipeline. */
    public enum Kind { LAYER, FIRST, LAST }

    public static Placement layer(int layer) {
        if (layer < 0) {
            throw new IllegalArgumentException("layer " + layer + " is negative");
        }
        return new Placement(layer, Kind.LAYER);
    }

    public static Placement first() {
        return new Placement(-1, Kind.FIRST);
    }

    public static Placement last() {
        return new Placement(-1, Kind.LAST);
    }

    @Override
    public String toString() {
        return kind == Kind.LAYER ? "layer " + layer : kind.name().toLowerCase(java.util.Locale.ROOT);
    }
}
