package io.tenplex.datasets.hdf5;

import java.util.function.Supplier;

/**
 * How many bytes a chunk being decoded on this thread may grow to: the chunk's size as its dataset
 * declares it (checked against {@link Hdf5Array#MAX_BLOCK_BYTES} when the dataset was opened), plus
 * {@link #TRAILERS} for the checksums that filters such as Fletcher-32 append. Every decoder of the
 * {@link BoundedFilters} stops there: a chunk that claims or inflates to more is refused with
 * {@link Exceeded} before more than the limit is allocated. Decoding outside {@link #within} (a
 * caller that set no limit) is held to the largest chunk any dataset may declare.
 */
final class ChunkLimit {
    /** Bytes allowed beyond a chunk's declared size: checksum trailers of the filters in its pipeline. */
    static final int TRAILERS = 64;
    private static final ThreadLocal<Long> LIMIT = new ThreadLocal<>();

    /** A chunk whose decoded bytes would pass the limit (a filter bomb, or a corrupt chunk). */
    static final class Exceeded extends RuntimeException {
        Exceeded(String message) {
            super(message);
        }
    }

    private ChunkLimit() {
    }

    /** Runs {@code decode} with chunks held to {@code chunkBytes} (plus {@link #TRAILERS}) on this thread. */
    static <T> T within(long chunkBytes, Supplier<T> decode) {
        Long before = LIMIT.get();
        LIMIT.set(Math.min(chunkBytes, Hdf5Array.MAX_BLOCK_BYTES) + TRAILERS);
        try {
            return decode.get();
        } finally {
            if (before == null) {
                LIMIT.remove();
            } else {
                LIMIT.set(before);
            }
        }
    }

    /** The most bytes a filter may produce from one chunk on this thread now. */
    static int bytes() {
        Long l = LIMIT.get();
        return (int) Math.min(l == null ? Hdf5Array.MAX_BLOCK_BYTES + TRAILERS : l, Integer.MAX_VALUE - 8);
    }

    /** Refuses a claimed or produced size {@code n} over the limit, naming the {@code filter}. */
    static int check(String filter, long n) {
        int limit = bytes();
        if (n < 0 || n > limit) {
            throw new Exceeded("a " + filter + " chunk " + (n < 0 ? "claims a negative size " + n
                    : "decodes to " + n + " bytes or more") + ", over the " + limit + " the dataset's chunks may hold"
                    + " (refused: a corrupt or hostile file)");
        }
        return (int) n;
    }

    /** The {@link Exceeded} that caused {@code e}, or null. */
    static Exceeded cause(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof Exceeded x) {
                return x;
            }
        }
        return null;
    }
}
