package io.tenplex.datasets.rehearsal;

/**
 * One representative: its class and its tuple of tensors in the wire form of {@link Tuples} (the part
 * after the class: part count, then per part dtype, shape and bytes). The array is never changed after
 * it is made; holders share it.
 */
public record Sample(int cls, byte[] tuple) {
    /** The bytes it holds. */
    public int bytes() {
        return tuple.length;
    }
}
