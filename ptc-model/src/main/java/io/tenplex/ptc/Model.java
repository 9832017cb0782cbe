package io.tenplex.ptc;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A model's state as the planner sees it: its tensors, its non-tensor values, its layer count. */
public final class Model {
    private final List<TensorSpec> tensors;
    private final List<ValueSpec> values;
    private final int layers;
    private final Map<String, TensorSpec> byName = new LinkedHashMap<>();
    private final Map<String, String> ties;
    private final long bytes;

    public Model(List<TensorSpec> tensors, List<ValueSpec> values, int layers) {
        this(tensors, values, layers, Map.of());
    }

    /**
     * @param ties tensors that are copies of another (name of the copy to name of the original), such
     *     as Megatron's {@code word_embeddings_for_head}: a configuration that lacks the copy drops it,
     *     one that gains it fills it from the original
     */
    public Model(List<TensorSpec> tensors, List<ValueSpec> values, int layers, Map<String, String> ties) {
        this.ties = Map.copyOf(ties);
        this.tensors = List.copyOf(tensors);
        this.values = List.copyOf(values);
        this.layers = layers;
        for (TensorSpec t : tensors) {
            if (byName.put(t.name(), t) != null) {
                throw new IllegalArgumentException("tensor " + t.name() + " appears twice");
            }
            if (t.placement().kind() == Placement.Kind.LAYER && t.placement().layer() >= layers) {
                throw new IllegalArgumentException(t.name() + " is on layer " + t.placement().layer() + " of " + layers);
            }
        }
        ties.forEach(this::checkTie);
        long b = 0;
        try {
            for (TensorSpec t : tensors) {
                b = Math.addExact(b, t.shape().volume() * t.dtype().itemSize()); // each checked by TensorSpec
            }
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("the model's " + tensors.size() + " tensors hold more than 2^63 bytes");
        }
        this.bytes = b;
    }

    /** A tie names an original of the model other than the copy, shaped as the copy when the copy is here. */
    private void checkTie(String copy, String original) {
        TensorSpec o = byName.get(original);
        TensorSpec c = byName.get(copy);
        if (copy.equals(original) || o == null) {
            throw new IllegalArgumentException("tied copy " + copy + ": its original " + original + (o == null
                    ? " is no tensor of the model" : " is itself"));
        }
        if (c != null && !c.shape().equals(o.shape())) {
            throw new IllegalArgumentException("tied copy " + copy + " " + c.shape() + " is not shaped as its original "
                    + original + " " + o.shape());
        }
    }

    public List<TensorSpec> tensors() {
        return tensors;
    }

    public List<ValueSpec> values() {
        return values;
    }

    public int layers() {
        return layers;
    }

    /** Tied copies: name of the copy to name of the original. */
    public Map<String, String> ties() {
        return ties;
    }

    /** The original a tied copy is filled from, or null when {@code name} is no tied copy. */
    public String tiedTo(String name) {
        return ties.get(name);
    }

    public boolean has(String name) {
        return byName.containsKey(name);
    }

    public TensorSpec tensor(String name) {
        TensorSpec t = byName.get(name);
        if (t == null) {
            throw new IllegalArgumentException("no tensor " + name + " in the model");
        }
        return t;
    }

    /** Bytes of all tensors (unpadded, one replica). */
    public long bytes() {
        return bytes;
    }
}
