package io.tenplex.ptc;

import java.util.regex.Pattern;

/**
 * One tensor of a model: its global name (with the global layer index), element type, logical
 * global shape (a vocabulary dimension unpadded), pipeline placement and partitioning.
 */
public record TensorSpec(String name, DType dtype, Shape shape, Placement placement, Partition partition) {
    private static final Pattern LAYER = Pattern.compile("layers\\.(\\d+)\\.");

    public TensorSpec {
        if (name == null || name.isEmpty() || dtype == null || shape == null || placement == null || partition == null) {
            throw new IllegalArgumentException("tensor spec needs a name, dtype, shape, placement and partition");
        }
        try {
            Math.multiplyExact(shape.volume(), (long) dtype.itemSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(name + ": " + dtype.wireName() + shape + " has more than 2^63 bytes");
        }
        int dim = Partition.splitDim(partition);
        if (dim >= shape.rank()) {
            throw new IllegalArgumentException(name + ": split dim " + dim + " but the tensor has rank " + shape.rank());
        }
    }

    /**
     * The key under which a stage stores this tensor: the global layer index in {@code layers.<n>.}
     * renumbered to {@code localLayer}. In a model with several stacks of layers (an encoder's
     * {@code encoder.layers.<n>}, then a decoder's, numbered in module order), a name carries its
     * stack's own number, not the global one: a stage numbers each stack from 0 at the first of its
     * layers it holds, so the number becomes {@code min(localLayer, n)} (a stage that starts inside
     * the stack, or one that holds the stack from its start).
     */
    public String localKey(int localLayer) {
        if (placement.kind() != Placement.Kind.LAYER) {
            return name;
        }
        String global = "layers." + placement.layer() + ".";
        if (name.contains(global)) {
            return name.replaceFirst("layers\\." + placement.layer() + "\\.", "layers." + localLayer + ".");
        }
        var m = LAYER.matcher(name);
        if (!m.find()) {
            return name; // outside every stack, placed on a layer's stage (a stack's final norm)
        }
        int n = Integer.parseInt(m.group(1));
        return name.substring(0, m.start(1)) + Math.min(localLayer, n) + name.substring(m.end(1));
    }

    /** The global layer index written in a key, or -1. */
    public static int layerIn(String key) {
        var m = LAYER.matcher(key);
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }
}
