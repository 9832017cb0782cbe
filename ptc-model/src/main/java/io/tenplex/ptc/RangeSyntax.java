package io.tenplex.ptc;

/**
 * The wire syntax of regions: comma-separated {@code start:stop} per dimension, half-open. An empty
 * bound means 0 (start) or the dimension size (stop); fewer slices than dimensions take the remaining
 * dimensions whole; an empty text selects everything. A negative bound counts from the end of the
 * dimension, as in Python ({@code -2:} is the last two). Steps, bounds outside the dimension and
 * {@code start > stop} are rejected with a message that carries the values.
 */
public final class RangeSyntax {
    private RangeSyntax() {
    }

    /**
     * Parses {@code text} against {@code shape}.
     *
     * @throws IllegalArgumentException with the offending slice and the dimension's size
     */
    public static Region parse(String text, Shape shape) {
        if (text == null || text.isBlank()) {
            return Region.whole(shape);
        }
        String[] slices = text.split(",", -1);
        if (slices.length > shape.rank()) {
            throw new IllegalArgumentException("range '" + text + "' has " + slices.length
                    + " slices but the tensor has " + shape.rank() + " dimensions (shape " + shape + ")");
        }
        IndexRange[] ranges = new IndexRange[shape.rank()];
        for (int d = 0; d < shape.rank(); d++) {
            long size = shape.dim(d);
            ranges[d] = d < slices.length ? parseSlice(slices[d].trim(), d, size) : IndexRange.all(size);
        }
        return Region.of(ranges);
    }

    private static IndexRange parseSlice(String s, int dim, long size) {
        int colon = s.indexOf(':');
        if (colon < 0 || s.indexOf(':', colon + 1) >= 0) {
            throw new IllegalArgumentException("slice '" + s + "' for dim " + dim
                    + " is not of the form start:stop (steps are not supported)");
        }
        long start = bound(s.substring(0, colon).trim(), 0, dim, size, s);
        long stop = bound(s.substring(colon + 1).trim(), size, dim, size, s);
        if (start < 0 || stop > size || start > stop) {
            throw new IllegalArgumentException("range " + s + " out of bounds for dim " + dim + " of size " + size
                    + " (expected: 0 <= start <= stop <= " + size + ")");
        }
        return IndexRange.of(start, stop);
    }

    private static long bound(String b, long dflt, int dim, long size, String slice) {
        if (b.isEmpty()) {
            return dflt;
        }
        long v;
        try {
            v = Long.parseLong(b);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("slice '" + slice + "' for dim " + dim + ": '" + b
                    + "' is not an integer");
        }
        if (v < 0) {
            v += size;
            if (v < 0) {
                throw new IllegalArgumentException("range " + slice + " out of bounds for dim " + dim + " of size "
                        + size + " (negative bounds count from the end; expected >= -" + size + ")");
            }
        }
        return v;
    }

    /** The canonical wire form: every dimension as {@code start:stop}. */
    public static String print(Region region) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < region.rank(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(region.range(i));
        }
        return b.toString();
    }
}
