package io.tenplex.datasets.adios2;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Overflow-safe arithmetic on the blocks of a global array: a block's bytes (checked to lie within the
 * shape), and the check that one step's blocks cover its shape exactly once (no gap, which ADIOS2 would
 * leave unwritten, and no overlap, where which writer wins is not defined), so that every byte served
 * is one a writer wrote. Stateless.
 */
final class Blocks {
    /** The most blocks one step of a served variable may have. */
    static final int MAX_STEP_BLOCKS = 1 << 16;
    /** The most pairs of blocks compared for overlaps in all the steps of a variable. */
    static final long MAX_PAIRS = 1L << 26;

    private Blocks() {}

    /** {@code a + b}, refused (naming {@code what}) if it overflows. */
    static long add(long a, long b, String what, MetaBytes where) {
        try {
            return Math.addExact(a, b);
        } catch (ArithmeticException e) {
            throw where.bad(what + ": an offset overflows");
        }
    }

    /** The product of {@code n} and the extents, refused (naming {@code what}) if it overflows. */
    static long product(long n, long[] extents, int from, String what, MetaBytes where) {
        try {
            for (int d = from; d < extents.length; d++) {
                n = Math.multiplyExact(n, extents[d]);
            }
            return n;
        } catch (ArithmeticException e) {
            throw where.bad(what + ": its size " + Arrays.toString(extents) + " overflows");
        }
    }

    /** The bytes of a block at {@code start} of {@code count} in {@code shape}, checked to lie within the shape
     * (no start or count is negative, so that the shape is not either). */
    static long bytes(long[] start, long[] count, long[] shape, Adios2Type type, String what, MetaBytes where) {
        for (int d = 0; d < shape.length; d++) {
            if (start[d] < 0 || count[d] < 0 || start[d] > shape[d] || count[d] > shape[d] - start[d]) {
                throw where.bad(what + " at " + Arrays.toString(start) + " of " + Arrays.toString(count)
                        + " lies outside the shape " + Arrays.toString(shape));
            }
        }
        return product(type.size, count, 0, what, where);
    }

    /**
     * Null if the blocks cover {@code shape} exactly once, else what is wrong. Blocks lie within the
     * shape (checked by {@link #bytes}), so volumes do not overflow when the shape's does not.
     */
    static String coverage(List<Adios2Variable.Block> blocks, long[] shape) {
        return coverage(blocks, shape, new long[] {MAX_PAIRS});
    }

    /**
     * As {@link #coverage(List, long[])}, comparing at most {@code pairs[0]} pairs of blocks (what is left
     * is put back): blocks that share their rows are compared pairwise, so a variable's steps of 2^16
     * column blocks would take 2^31 comparisons each.
     */
    static String coverage(List<Adios2Variable.Block> blocks, long[] shape, long[] pairs) {
        if (blocks.size() > MAX_STEP_BLOCKS) {
            return "a step has " + blocks.size() + " blocks (at most " + MAX_STEP_BLOCKS + " are served)";
        }
        List<Adios2Variable.Block> sorted = new ArrayList<>(blocks);
        sorted.removeIf(b -> volume(b.count()) == 0);
        sorted.sort(Comparator.comparingLong(b -> b.start()[0]));
        long covered = 0;
        for (int i = 0; i < sorted.size(); i++) {
            Adios2Variable.Block a = sorted.get(i);
            covered += volume(a.count());
            for (int j = i + 1; j < sorted.size() && sorted.get(j).start()[0] < a.start()[0] + a.count()[0]; j++) {
                if (--pairs[0] < 0) {
                    return "its blocks share rows too much to be checked for overlaps (at most " + MAX_PAIRS
                            + " pairs of blocks are compared)";
                }
                if (overlap(a, sorted.get(j))) {
                    return "blocks overlap at " + Arrays.toString(sorted.get(j).start());
                }
            }
        }
        return covered == volume(shape) ? null : "its blocks leave " + (volume(shape) - covered)
                + " elements of the shape " + Arrays.toString(shape) + " unwritten in a step";
    }

    private static long volume(long[] count) {
        long v = 1;
        for (long c : count) {
            v *= c;
        }
        return v;
    }

    private static boolean overlap(Adios2Variable.Block a, Adios2Variable.Block b) {
        for (int d = 0; d < a.start().length; d++) {
            if (a.start()[d] >= b.start()[d] + b.count()[d] || b.start()[d] >= a.start()[d] + a.count()[d]) {
                return false;
            }
        }
        return true;
    }
}
