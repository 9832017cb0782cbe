package io.tenplex.datasets.adios2;

/**
 * The element types of ADIOS2 variables, by ADIOS2's {@code DataType} code (the code BP5 metadata
 * names), with their sizes in bytes and their names as {@code bpls} shows them. Types whose bytes
 * are not a fixed-size row-major element (strings, structs) or depend on the writer's platform (long
 * double) are not {@link #served}.
 */
public enum Adios2Type {
    INT8(1, 1, "int8_t"),
    INT16(2, 2, "int16_t"),
    INT32(3, 4, "int32_t"),
    INT64(4, 8, "int64_t"),
    UINT8(5, 1, "uint8_t"),
    UINT16(6, 2, "uint16_t"),
    UINT32(7, 4, "uint32_t"),
    UINT64(8, 8, "uint64_t"),
    FLOAT(9, 4, "float"),
    DOUBLE(10, 8, "double"),
    LONG_DOUBLE(11, 16, "long double"),
    FLOAT_COMPLEX(12, 8, "float complex"),
    DOUBLE_COMPLEX(13, 16, "double complex"),
    STRING(14, 0, "string"),
    CHAR(15, 1, "char"),
    STRUCT(16, 0, "struct");

    /** ADIOS2's {@code DataType} code. */
    final int code;
    /** Bytes per element (0 for types without a fixed size). */
    public final int size;
    /** The name {@code bpls} gives it. */
    public final String adiosName;

    Adios2Type(int code, int size, String adiosName) {
        this.code = code;
        this.size = size;
        this.adiosName = adiosName;
    }

    /** True if its arrays are served: fixed-size elements whose bytes do not depend on the platform. */
    public boolean served() {
        return size > 0 && this != LONG_DOUBLE;
    }

    /** The type of ADIOS2 {@code DataType} code {@code code}, or null for an unknown one. */
    static Adios2Type of(long code) {
        for (Adios2Type t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        return null;
    }
}
