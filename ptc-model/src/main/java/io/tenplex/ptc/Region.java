package io.tenplex.ptc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * A rectangular part of a tensor: one half-open {@link IndexRange} per dimension. Immutable. A
 * region of rank 0 is the single element of a scalar.
 */
public final class Region {
    private final IndexRange[] ranges;

    private Region(IndexRange[] ranges) {
        this.ranges = ranges;
    }

    public static Region of(IndexRange... ranges) {
        for (int i = 0; i < ranges.length; i++) {
            if (ranges[i] == null) {
                throw new IllegalArgumentException("range for dim " + i + " is null");
            }
        }
        return new Region(ranges.clone());
    }

    public static Region of(List<IndexRange> ranges) {
        return of(ranges.toArray(new IndexRange[0]));
    }

    /** The region covering the whole shape. */
    public static Region whole(Shape shape) {
        IndexRange[] r = new IndexRange[shape.rank()];
        for (int i = 0; i < r.length; i++) {
            r[i] = IndexRange.all(shape.dim(i));
        }
        return new Region(r);
    }

    /**
     * A region given by its offset and extent per dimension.
     */
    public static Region at(long[] offset, long[] extent) {
        if (offset.length != extent.length) {
            throw new IllegalArgumentException("offset rank " + offset.length + " != extent rank " + extent.length);
        }
        IndexRange[] r = new IndexRange[offset.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = IndexRange.of(offset[i], offset[i] + extent[i]);
        }
        return new Region(r);
    }

    public int rank() {
        return ranges.length;
    }

    public IndexRange range(int dim) {
        return ranges[dim];
    }

    public List<IndexRange> ranges() {
        return List.of(ranges);
    }

    /** Start index per dimension. */
    public long[] offset() {
        long[] o = new long[ranges.length];
        for (int i = 0; i < o.length; i++) {
            o[i] = ranges[i].start();
        }
        return o;
    }

    /** The shape of the sub-tensor this region selects. */
    public Shape shape() {
        long[] d = new long[ranges.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = ranges[i].size();
        }
        return Shape.of(d);
    }

    /** Number of elements selected. */
    public long volume() {
        return shape().volume();
    }

    public boolean isEmpty() {
        for (IndexRange r : ranges) {
            if (r.isEmpty()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Checks that this region lies inside {@code shape}.
     *
     * @throws IllegalArgumentException e.g. {@code range 3:9 out of bounds for dim 1 of size 8
     *     (expected: 0 <= start <= stop <= 8)}
     */
    public Region checkWithin(Shape shape) {
        if (shape.rank() != ranges.length) {
            throw new IllegalArgumentException("region " + this + " has rank " + ranges.length
                    + " but the tensor has rank " + shape.rank() + " (shape " + shape + ")");
        }
        for (int i = 0; i < ranges.length; i++) {
            if (ranges[i].stop() > shape.dim(i)) {
                throw new IllegalArgumentException("range " + ranges[i] + " out of bounds for dim " + i + " of size "
                        + shape.dim(i) + " (expected: 0 <= start <= stop <= " + shape.dim(i) + ")");
            }
        }
        return this;
    }

    public boolean contains(Region other) {
        checkSameRank(other);
        for (int i = 0; i < ranges.length; i++) {
            if (!ranges[i].contains(other.ranges[i])) {
                return false;
            }
        }
        return true;
    }

    /** The common part, or empty when the regions do not overlap in some dimension. */
    public Optional<Region> intersect(Region other) {
        checkSameRank(other);
        IndexRange[] r = new IndexRange[ranges.length];
        for (int i = 0; i < r.length; i++) {
            Optional<IndexRange> x = ranges[i].intersect(other.ranges[i]);
            if (x.isEmpty()) {
                return Optional.empty();
            }
            r[i] = x.get();
        }
        return Optional.of(new Region(r));
    }

    /** This region moved by {@code delta} per dimension (e.g. into a shard's local coordinates). */
    public Region shift(long[] delta) {
        if (delta.length != ranges.length) {
            throw new IllegalArgumentException("shift of rank " + delta.length + " for region of rank " + ranges.length);
        }
        IndexRange[] r = new IndexRange[ranges.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = ranges[i].shift(delta[i]);
        }
        return new Region(r);
    }

    /**
     * Cuts this region along {@code dim} at the given absolute cut points (strictly inside the range,
     * ascending) into consecutive pieces that tile it.
     */
    public List<Region> split(int dim, long... cuts) {
        IndexRange r = ranges[dim];
        List<Region> out = new ArrayList<>(cuts.length + 1);
        long prev = r.start();
        for (long c : cuts) {
            if (c <= prev || c >= r.stop()) {
                throw new IllegalArgumentException("cut " + c + " not strictly inside " + prev + ":" + r.stop()
                        + " of dim " + dim + " (cuts must ascend)");
            }
            out.add(with(dim, IndexRange.of(prev, c)));
            prev = c;
        }
        out.add(with(dim, IndexRange.of(prev, r.stop())));
        return out;
    }

    /** Splits along {@code dim} into {@code parts} near-equal consecutive pieces (the first ones larger). */
    public List<Region> splitEven(int dim, int parts) {
        IndexRange r = ranges[dim];
        if (parts < 1 || parts > Math.max(1, r.size())) {
            throw new IllegalArgumentException("cannot split " + r + " of dim " + dim + " into " + parts + " parts");
        }
        long base = r.size() / parts;
        long extra = r.size() % parts;
        long[] cuts = new long[parts - 1];
        long at = r.start();
        for (int i = 0; i < parts - 1; i++) {
            at += base + (i < extra ? 1 : 0);
            cuts[i] = at;
        }
        return split(dim, cuts);
    }

    /** This region with the range of {@code dim} replaced. */
    public Region with(int dim, IndexRange range) {
        IndexRange[] r = ranges.clone();
        r[dim] = range;
        return new Region(r);
    }

    private void checkSameRank(Region other) {
        if (other.ranges.length != ranges.length) {
            throw new IllegalArgumentException("regions of different rank: " + this + " and " + other);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Region r && Arrays.equals(ranges, r.ranges);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(ranges);
    }

    /** The wire form, e.g. {@code 1:3,0:4}. */
    @Override
    public String toString() {
        return RangeSyntax.print(this);
    }
}
