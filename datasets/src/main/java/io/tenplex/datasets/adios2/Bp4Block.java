package io.tenplex.datasets.adios2;

import java.nio.charset.StandardCharsets;

/**
 * One characteristics set of a BP4 variable index entry: one block a writer wrote, as a count, a
 * length and characteristics by id (BPBase's {@code CharacteristicID}): the time index (step), the
 * file index (the subfile {@code data.N}), the dimensions (count, shape and start per dimension), the
 * bounds (min/max, possibly per sub-block), the offset and the payload offset (where the block's
 * bytes lie in its subfile), and a transform type (an operator). A global array's block goes into a
 * {@link VariableTable}, checked against its subfile; anything else is recorded as refused. Stateless.
 */
final class Bp4Block {
    /** {@code LocalValueDim} of ADIOS2: a local value's shape. */
    private static final long LOCAL_VALUE_DIM = -3L; // SIZE_MAX - 2
    /** {@code JoinedDim} of ADIOS2: a joined array's shape in the joined dimension. */
    private static final long JOINED_DIM = -2L; // SIZE_MAX - 1

    private Bp4Block() {}

    /** The type of BP4 type code {@code code} (BPBase's {@code DataTypes}), or null for an unknown one. */
    static Adios2Type type(int code) {
        return switch (code) {
            case 0 -> Adios2Type.INT8;
            case 1 -> Adios2Type.INT16;
            case 2 -> Adios2Type.INT32;
            case 4 -> Adios2Type.INT64;
            case 50 -> Adios2Type.UINT8;
            case 51 -> Adios2Type.UINT16;
            case 52 -> Adios2Type.UINT32;
            case 54 -> Adios2Type.UINT64;
            case 5 -> Adios2Type.FLOAT;
            case 6 -> Adios2Type.DOUBLE;
            case 7 -> Adios2Type.LONG_DOUBLE;
            case 9, 12 -> Adios2Type.STRING;
            case 10 -> Adios2Type.FLOAT_COMPLEX;
            case 11 -> Adios2Type.DOUBLE_COMPLEX;
            case 55 -> Adios2Type.CHAR;
            default -> null;
        };
    }

    /** What one set says. */
    private static final class Set {
        long fileIndex;
        long payload = -1;
        long[] count;
        long[] shape;
        long[] start;
        String operator;
    }

    /** Parses the set at {@code pos} (within {@code end}) of variable {@code name} in step {@code s}; where it ends. */
    static long parse(MetaBytes md, long pos, long end, String name, Adios2Type type, int s, VariableTable table,
            DataFiles data) {
        String what = "block of variable '" + name + "' in step " + s + " at byte " + pos;
        long length = md.u32(pos + 1, what + ": its length");
        if (length > end - pos - 5) {
            throw md.bad(what + " has length " + length + ", beyond its variable's entry");
        }
        long stop = pos + 5 + length;
        Set set = new Set();
        for (long p = pos + 5; p < stop; ) {
            p = characteristic(md, p, stop, type, set, what);
        }
        add(md, set, name, type, s, table, data, what);
        return stop;
    }

    private static long characteristic(MetaBytes md, long p, long stop, Adios2Type type, Set set, String what) {
        int id = md.u8(p, what + ": a characteristic id");
        String c = what + ": characteristic " + id;
        long q = p + 1;
        switch (id) {
            case 8 -> q += 4; // time index
            case 7 -> {
                set.fileIndex = md.u32(q, c + " (file index)");
                q += 4;
            }
            case 0, 1, 2 -> q += type.size; // value, min, max
            case 3 -> q += 8; // offset
            case 6 -> {
                set.payload = md.size(q, Long.MAX_VALUE, c + " (payload offset)");
                q += 8;
            }
            case 4 -> q = dimensions(md, q, set, c);
            case 12 -> q = minMax(md, q, type, set, c);
            case 9 -> q += 4; // bitmap
            case 11 -> {
                int n = md.u8(q, c + " (operator)");
                md.need(q + 1, n, c + " (operator name)");
                set.operator = new String(md.bytes, (int) q + 1, n, StandardCharsets.UTF_8);
                q = stop; // the operator's parameters: not read
            }
            default -> throw md.bad(c + " is not one this reader knows");
        }
        if (q > stop) {
            throw md.bad(c + " runs past the end of its block's characteristics");
        }
        return q;
    }

    private static long dimensions(MetaBytes md, long q, Set set, String c) {
        int dims = md.u8(q, c + " (dimensions)");
        q += 3;
        md.need(q, 24L * dims, c + " (dimensions)");
        set.count = new long[dims];
        set.shape = new long[dims];
        set.start = new long[dims];
        for (int d = 0; d < dims; d++, q += 24) {
            set.count[d] = md.i64(q, c);
            set.shape[d] = md.i64(q + 8, c);
            set.start[d] = md.i64(q + 16, c);
        }
        return q;
    }

    private static long minMax(MetaBytes md, long q, Adios2Type type, Set set, String c) {
        int subBlocks = md.u16(q, c + " (min/max sub-blocks)");
        q += 2 + 2L * type.size;
        if (subBlocks > 1) {
            int dims = set.count == null ? 0 : set.count.length;
            q += 1 + 8 + 2L * dims + 2L * subBlocks * type.size;
        }
        return q;
    }

    private static void add(MetaBytes md, Set set, String name, Adios2Type type, int s, VariableTable table,
            DataFiles data, String what) {
        if (set.count == null || set.count.length == 0) {
            table.refuse(name, type, "it is a global value (a scalar), not an array");
            return;
        }
        boolean noShape = java.util.Arrays.stream(set.shape).allMatch(x -> x == 0);
        if (set.count.length == 1 && set.shape[0] == LOCAL_VALUE_DIM) {
            table.refuse(name, type, "it is a local value, not a global array");
        } else if (noShape) {
            table.refuse(name, type, "it is a local array (no global shape)");
        } else if (java.util.Arrays.stream(set.shape).anyMatch(x -> x == JOINED_DIM)) {
            table.refuse(name, type, "it is a joined array (refused)");
        } else if (set.operator != null) {
            table.refuse(name, type, "it is stored through the operator '" + set.operator + "' (compression), which "
                    + "is refused");
        } else {
            global(md, set, name, type, s, table, data, what);
        }
    }

    /** Refuses a dimension (a {@code size_t}) over 2^63, which would be negative here. */
    private static void unsigned(MetaBytes md, long v, String field) {
        if (v < 0) {
            throw md.bad(field + " is " + Long.toUnsignedString(v) + " (over 2^63)");
        }
    }

    private static void global(MetaBytes md, Set set, String name, Adios2Type type, int s, VariableTable table,
            DataFiles data, String what) {
        for (int d = 0; d < set.count.length; d++) {
            unsigned(md, set.count[d], what + ": its count of dimension " + d);
            unsigned(md, set.shape[d], what + ": its shape of dimension " + d);
            unsigned(md, set.start[d], what + ": its start of dimension " + d);
        }
        if (set.payload < 0 || set.fileIndex > Integer.MAX_VALUE) {
            throw md.bad(what + " has no payload offset or a file index of " + set.fileIndex);
        }
        long bytes = Blocks.bytes(set.start, set.count, set.shape, type, what, md);
        int subfile = (int) set.fileIndex;
        long size = data.size(subfile);
        if (set.payload > size - bytes) {
            throw md.bad(what + " lies at bytes " + set.payload + "+" + bytes + " of data." + subfile + ", beyond its "
                    + size + " bytes (truncated?)");
        }
        table.add(name, type, s, set.shape, new Adios2Variable.Block(subfile, set.payload, set.start, set.count), md);
    }
}
