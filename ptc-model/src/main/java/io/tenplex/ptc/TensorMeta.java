package io.tenplex.ptc;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/** What a tensor is without its bytes: element type and shape, hence its byte size. */
public record TensorMeta(DType dtype, Shape shape) {
    private static final Pattern LINES = Pattern.compile("\\R");

    public TensorMeta {
        if (dtype == null || shape == null) {
            throw new IllegalArgumentException("dtype and shape are required");
        }
        try {
            Math.multiplyExact(shape.volume(), (long) dtype.itemSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("tensor " + dtype.wireName() + shape + " has more than 2^63 bytes");
        }
    }

    public static TensorMeta of(DType dtype, long... dims) {
        return new TensorMeta(dtype, Shape.of(dims));
    }

    /** Size of the row-major data in bytes. */
    public long byteSize() {
        return shape.volume() * dtype.itemSize();
    }

    /**
     * The prototype's sidecar text: dtype short name, rank, then one dimension per line, each line
     * ending with a newline, e.g. {@code "f32\n2\n3\n4\n"}.
     */
    public String toSidecar() {
        StringBuilder b = new StringBuilder().append(dtype.wireName()).append('\n').append(shape.rank()).append('\n');
        for (int i = 0; i < shape.rank(); i++) {
            b.append(shape.dim(i)).append('\n');
        }
        return b.toString();
    }

    public byte[] sidecarBytes() {
        return toSidecar().getBytes(StandardCharsets.US_ASCII);
    }

    /** Parses a sidecar (see {@link #toSidecar()}); trailing blank lines are ignored. */
    public static TensorMeta parseSidecar(String text) {
        String[] lines = LINES.split(text.strip());
        if (lines.length < 2) {
            throw new IllegalArgumentException("sidecar needs a dtype line and a rank line, got: '" + text + "'");
        }
        DType dtype = DType.fromName(lines[0].trim());
        int rank;
        try {
            rank = Integer.parseInt(lines[1].trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("sidecar rank line '" + lines[1] + "' is not an integer");
        }
        if (rank < 0 || lines.length != 2 + rank) {
            throw new IllegalArgumentException("sidecar declares rank " + rank + " but has " + (lines.length - 2)
                    + " dimension lines");
        }
        long[] dims = new long[rank];
        for (int i = 0; i < rank; i++) {
            try {
                dims[i] = Long.parseLong(lines[2 + i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("sidecar dimension line '" + lines[2 + i] + "' is not an integer");
            }
        }
        return new TensorMeta(dtype, Shape.of(dims));
    }

    @Override
    public String toString() {
        return dtype.wireName() + shape;
    }
}
