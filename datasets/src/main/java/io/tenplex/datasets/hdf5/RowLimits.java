package io.tenplex.datasets.hdf5;

/**
 * The limits every array source (HDF5, NetCDF, ADIOS2) puts on what it serves: a row (sample) of at most
 * 16 MiB, at most 2^31-9 rows (the index holds them in arrays). Each check refuses with an
 * {@link IllegalArgumentException} (a 400) naming the array and the limit. Stateless.
 */
public final class RowLimits {
    /** The largest row (sample) served. */
    public static final long MAX_ROW_BYTES = 16L << 20;
    /** The most rows (samples) of one array. */
    public static final long MAX_ROWS = Integer.MAX_VALUE - 8;

    private RowLimits() {
    }

    /** Refuses more than {@link #MAX_ROWS} rows; {@code what} names the array. */
    public static void checkRows(String what, long rows) {
        if (rows > MAX_ROWS) {
            throw new IllegalArgumentException(what + " has " + rows + " rows (limit " + MAX_ROWS + ")");
        }
    }

    /** Refuses a row over {@link #MAX_ROW_BYTES}; {@code what} names the array. */
    public static void checkRowBytes(String what, long rowBytes) {
        if (rowBytes > MAX_ROW_BYTES) {
            throw new IllegalArgumentException(what + " has rows of " + rowBytes + " bytes (limit " + MAX_ROW_BYTES + ")");
        }
    }
}
