package io.tenplex.datasets.netcdf;

/**
 * One variable of a classic file's header, its sizes computed from its shape (the header's
 * {@code vsize} is redundant and not trusted, as the NetCDF library does not trust it).
 *
 * @param name its name
 * @param type its element type
 * @param dims its dimension lengths, the record dimension (if {@code record}) as 0
 * @param record true if its first dimension is the record (unlimited) dimension
 * @param begin the file offset of its data (of its part of the first record, for a record variable)
 * @param len the bytes it takes (a record variable: per record), padded to 4 bytes as the file lays it out
 * @param rowBytes the bytes of one row along its first dimension (a record, for a record variable)
 */
record CdfVariable(String name, CdfType type, long[] dims, boolean record, long begin, long len, long rowBytes) {
    boolean scalar() {
        return dims.length == 0;
    }
}
