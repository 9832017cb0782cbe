package io.tenplex.ptc;

import java.util.Arrays;

/**
 * The dimensions of a tensor: an immutable list of non-negative sizes. Rank 0 is a scalar holding
 * one element.
 */
public final class Shape {
    private static final Shape SCALAR = new Shape(new long[0]);
    private final long[] dims;
    private final long volume;

    private Shape(long[] dims) {
        this.dims = dims;
        long v = 1;
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw new IllegalArgumentException("dimension " + i + " is " + dims[i] + " (expected: >= 0)");
            }
            try {
                v = Math.multiplyExact(v, dims[i]);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " has more than 2^63 elements");
            }
        }
        this.volume = v;
    }

    /** A shape with the given dimensions (copied). */
    public static Shape of(long... dims) {
        return dims.length == 0 ? SCALAR : new Shape(dims.clone());
    }

    /** The rank-0 shape. */
    public static Shape scalar() {
        return SCALAR;
    }

    /**
     * Parses the wire form of dimensions: a comma list such as {@code 3,4}; empty means a scalar.
     *
     * @throws IllegalArgumentException naming the offending value
     */
    public static Shape parse(String text) {
        if (text == null || text.isBlank()) {
            return SCALAR;
        }
        String[] parts = text.split(",", -1);
        long[] dims = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i].trim();
            try {
                dims[i] = Long.parseLong(p);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("dims '" + text + "': dimension " + i + " is '" + p
                        + "' (expected a non-negative integer)");
            }
        }
        return new Shape(dims);
    }

    public int rank() {
        return dims.length;
    }

    public long dim(int i) {
        return dims[i];
    }

    /** A copy of the dimensions. */
    public long[] dims() {
        return dims.clone();
    }

    /** Number of elements (1 for a scalar). */
    public long volume() {
        return volume;
    }

    /** Row-major element strides (the last dimension has stride 1). */
    public long[] strides() {
        long[] s = new long[dims.length];
        long acc = 1;
        for (int i = dims.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= dims[i];
        }
        return s;
    }

    /** The wire form, e.g. {@code 3,4}; empty for a scalar. */
    public String toWire() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < dims.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(dims[i]);
        }
        return b.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape s && Arrays.equals(dims, s.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return Arrays.toString(dims);
    }
}
