package io.tenplex.datasets.netcdf;

/** The element types of the classic formats, by their {@code nc_type} code, and their sizes in bytes. */
enum CdfType {
    BYTE(1, 1, false),
    CHAR(2, 1, false),
    SHORT(3, 2, false),
    INT(4, 4, false),
    FLOAT(5, 4, false),
    DOUBLE(6, 8, false),
    UBYTE(7, 1, true),
    USHORT(8, 2, true),
    UINT(9, 4, true),
    INT64(10, 8, true),
    UINT64(11, 8, true);

    final int code;
    final int size;
    /** True for the types only CDF-5 has. */
    final boolean cdf5;

    CdfType(int code, int size, boolean cdf5) {
        this.code = code;
        this.size = size;
        this.cdf5 = cdf5;
    }

    /** The type of {@code code} in a file of {@code version}, or null for a code the version does not have. */
    static CdfType of(int code, int version) {
        for (CdfType t : values()) {
            if (t.code == code && (version == 5 || !t.cdf5)) {
                return t;
            }
        }
        return null;
    }
}
