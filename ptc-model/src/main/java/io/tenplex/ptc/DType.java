package io.tenplex.ptc;

import java.util.Locale;
import java.util.Map;
import java.util.HashMap;

/**
 * Element types of tensors, with their item size, the short wire name used by the prototype's
 * protocol ({@code f32}), the NumPy name ({@code float32}; {@code bfloat16} for bf16) and the
 * {@code .npy} header descriptor. All multi-byte types are little-endian.
 */
public enum DType {
    BOOL(1, "bool", "bool", "|b1"),
    I8(1, "i8", "int8", "|i1"),
    U8(1, "u8", "uint8", "|u1"),
    I16(2, "i16", "int16", "<i2"),
    U16(2, "u16", "uint16", "<u2"),
    I32(4, "i32", "int32", "<i4"),
    U32(4, "u32", "uint32", "<u4"),
    I64(8, "i64", "int64", "<i8"),
    U64(8, "u64", "uint64", "<u8"),
    F16(2, "f16", "float16", "<f2"),
    /** NumPy has no bfloat16; its {@code .npy} form is a 2-byte void ({@code |V2}). */
    BF16(2, "bf16", "bfloat16", "|V2"),
    F32(4, "f32", "float32", "<f4"),
    F64(8, "f64", "float64", "<f8"),
    /** A pair of f32 (real, imaginary): split and joined whole, never between its halves. */
    C64(8, "c64", "complex64", "<c8"),
    /** A pair of f64 (real, imaginary). */
    C128(16, "c128", "complex128", "<c16");

    private static final Map<String, DType> BY_NAME = new HashMap<>();
    private static final Map<String, DType> BY_DESCR = new HashMap<>();

    static {
        for (DType t : values()) {
            BY_NAME.put(t.wireName, t);
            BY_NAME.put(t.numpyName, t);
            BY_DESCR.put(t.npyDescr, t);
        }
        BY_NAME.put("bool_", BOOL);
        // Byte-order-free and explicitly-native spellings that NumPy writes for 1-byte types.
        for (DType t : new DType[] {BOOL, I8, U8}) {
            BY_DESCR.put("<" + t.npyDescr.substring(1), t);
            BY_DESCR.put("=" + t.npyDescr.substring(1), t);
        }
        BY_DESCR.put("<V2", BF16);
    }

    private final int itemSize;
    private final String wireName;
    private final String numpyName;
    private final String npyDescr;

    DType(int itemSize, String wireName, String numpyName, String npyDescr) {
        this.itemSize = itemSize;
        this.wireName = wireName;
        this.numpyName = numpyName;
        this.npyDescr = npyDescr;
    }

    /** Bytes per element. */
    public int itemSize() {
        return itemSize;
    }

    /** Short name used on the wire and in sidecars, e.g. {@code f32}. */
    public String wireName() {
        return wireName;
    }

    /** NumPy name, e.g. {@code float32}; {@code bfloat16} for {@link #BF16}. */
    public String numpyName() {
        return numpyName;
    }

    /** The {@code descr} value of a {@code .npy} header, e.g. {@code <f4}. */
    public String npyDescr() {
        return npyDescr;
    }

    /**
     * Looks a dtype up by its short wire name or NumPy name (case-insensitive).
     *
     * @throws IllegalArgumentException naming the value and the accepted names
     */
    public static DType fromName(String name) {
        DType t = name == null ? null : BY_NAME.get(name.trim().toLowerCase(Locale.ROOT));
        if (t == null) {
            throw new IllegalArgumentException("unknown dtype '" + name + "' (expected one of: "
                    + "bool i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64 c64 c128, or a NumPy name such as float32)");
        }
        return t;
    }

    /** Looks a dtype up by its {@code .npy} descriptor; big-endian descriptors are rejected. */
    public static DType fromNpyDescr(String descr) {
        DType t = BY_DESCR.get(descr);
        if (t == null) {
            throw new IllegalArgumentException("unsupported .npy descr '" + descr
                    + "' (expected a little-endian numeric or bool type, or |V2 for bf16)");
        }
        return t;
    }
}
