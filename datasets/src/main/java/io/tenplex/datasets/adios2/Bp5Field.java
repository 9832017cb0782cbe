package io.tenplex.datasets.adios2;

import java.util.Arrays;

/**
 * One variable field of a BP5 metadata record, by its name {@code BP<kind>_<element size>_<type>_<name>}
 * ({@code BPg_<name>} and {@code BPl_<name>} for global and local values): the kind ({@code G} a global
 * array, {@code L} a local array, {@code J} a joined array, {@code g}/{@code l} values), ADIOS2's type
 * code and the variable's name. {@link #add} puts a global array's blocks of one writer and step into a
 * {@link VariableTable}, located in the data subfiles and checked against them; anything else is
 * recorded as refused. Immutable.
 */
final class Bp5Field {
    private final FfsFormat.Field field;
    private final FfsRecord record;
    private final char kind;
    private final String name;
    private final Adios2Type type;
    private final String typeError;

    private Bp5Field(FfsFormat.Field field, FfsRecord record, char kind, String name, Adios2Type type, String typeError) {
        this.field = field;
        this.record = record;
        this.kind = kind;
        this.name = name;
        this.type = type;
        this.typeError = typeError;
    }

    /** The field {@code f} of record {@code r}, its name parsed. */
    static Bp5Field of(FfsFormat.Field f, FfsRecord r) {
        String n = f.name();
        if (n.length() < 5 || !n.startsWith("BP") || (n.charAt(3) != '_' && n.charAt(3) != '-')) {
            throw r.bad("field '" + n + "' is not a BP5 variable field");
        }
        char kind = n.charAt(2);
        if (n.charAt(3) == '-') {
            return new Bp5Field(f, r, 'D', n, null, null); // a derived variable: an expression's result
        }
        if (kind == 'g' || kind == 'l') {
            return new Bp5Field(f, r, kind, n.substring(4), null, null);
        }
        String[] p = n.substring(4).split("_", 3);
        if (p.length < 3) {
            throw r.bad("field '" + n + "' does not name a size, type and variable");
        }
        Adios2Type t = null;
        String err = null;
        try {
            t = Adios2Type.of(Long.parseLong(p[1]));
            err = t == null ? "unknown type code " + p[1] : null;
        } catch (NumberFormatException e) {
            err = "type code '" + p[1] + "' is not a number";
        }
        String name = t == Adios2Type.STRUCT ? p[2].substring(p[2].indexOf('_') + 1) : p[2];
        return new Bp5Field(f, r, kind, name, t, err);
    }

    /** Adds what the field says of variable {@link #name} in step {@code s} written by writer {@code w}. */
    void add(VariableTable table, int s, int w, Bp5Index.Step step, DataFiles data) {
        if (typeError != null) {
            throw record.bad("variable '" + name + "' has an " + typeError);
        }
        switch (kind) {
            case 'G' -> { }
            case 'g' -> table.refuse(name, null, "it is a global value (a scalar), not an array");
            case 'l' -> table.refuse(name, null, "it is a local value, not a global array");
            case 'L' -> table.refuse(name, type, "it is a local array (no global shape)");
            case 'J' -> table.refuse(name, type, "it is a joined array (refused)");
            case 'D' -> table.refuse(name, null, "it is a derived variable (an expression; refused)");
            default -> throw record.bad("field '" + field.name() + "' has an unknown kind '" + kind + "'");
        }
        if (kind != 'G') {
            return;
        }
        if (!type.served()) {
            table.refuse(name, type, "its type " + type.adiosName + " is not served (only fixed-size primitive types)");
            return;
        }
        FfsFormat meta = record.format.structs.get(field.type());
        if (meta == null || !field.type().startsWith("MetaArray")) {
            throw record.bad("variable '" + name + "' has field type '" + field.type() + "', not a MetaArray struct");
        }
        if (field.type().startsWith("MetaArrayOp")) {
            table.refuse(name, type, "it is stored through an operator (compression such as blosc, bzip2, zfp "
                    + "or sz), which is refused");
            return;
        }
        blocks(meta, table, s, w, step, data);
    }

    private long at(FfsFormat meta, String f) {
        FfsFormat.Field x = meta.field(f);
        if (x == null || x.size() != 8) {
            throw record.bad("struct " + meta.name + " of variable '" + name + "' has no 8-byte field " + f);
        }
        return field.offset() + x.offset();
    }

    private void blocks(FfsFormat meta, VariableTable table, int s, int w, Bp5Index.Step step, DataFiles data) {
        String v = "variable '" + name + "'";
        long dims = record.number(at(meta, "Dims"), Bp5Metadata.MAX_DIMS, v + ": Dims");
        long blockCount = record.number(at(meta, "BlockCount"), VariableTable.MAX_BLOCKS, v + ": BlockCount");
        long dbCount = record.number(at(meta, "DBCount"), Long.MAX_VALUE, v + ": DBCount");
        if (dims == 0 || dbCount != dims * blockCount) {
            throw record.bad(v + " has DBCount " + dbCount + " for " + dims + " dimensions and " + blockCount + " blocks");
        }
        long[] shape = record.numbers(at(meta, "Shape"), dims, Long.MAX_VALUE, v + ": Shape");
        long[] count = record.numbers(at(meta, "Count"), dbCount, Long.MAX_VALUE, v + ": Count");
        long[] offset = record.numbers(at(meta, "Offset"), dbCount, Long.MAX_VALUE, v + ": Offset");
        long[] loc = record.numbers(at(meta, "DataBlockLocation"), blockCount, Long.MAX_VALUE, v + ": DataBlockLocation");
        if (shape == null || count == null || offset == null || loc == null) {
            throw record.bad(v + " is a global array without a Shape, Count, Offset or DataBlockLocation");
        }
        for (int b = 0; b < blockCount; b++) {
            long[] start = Arrays.copyOfRange(offset, (int) (b * dims), (int) ((b + 1) * dims));
            long[] extent = Arrays.copyOfRange(count, (int) (b * dims), (int) ((b + 1) * dims));
            String bw = v + " block " + b + " of writer " + w + " in step " + s;
            long bytes = Blocks.bytes(start, extent, shape, type, bw, record.md);
            int subfile = step.subfiles()[w];
            long pos = filePos(step.flushes()[w], loc[b], bytes, bw);
            long size = data.size(subfile);
            if (pos > size - bytes) {
                throw record.bad(bw + " lies at bytes " + pos + "+" + bytes + " of data." + subfile + ", beyond its "
                        + size + " bytes (truncated?)");
            }
            table.add(name, type, s, shape, new Adios2Variable.Block(subfile, pos, start, extent), record.md);
        }
    }

    /** The position in its subfile of {@code bytes} at {@code loc} of a writer's data of a step, through its flushes. */
    private long filePos(long[] flushes, long loc, long bytes, String bw) {
        long sum = 0;
        int n = flushes.length / 2;
        for (int i = 0; i < n; i++) {
            long size = flushes[2 * i + 1];
            if (loc - sum < size) {
                if (bytes > size - (loc - sum)) {
                    throw record.bad(bw + " crosses the end of flush " + i + " of its writer's data");
                }
                return Blocks.add(flushes[2 * i], loc - sum, bw, record.md);
            }
            sum = Blocks.add(sum, size, bw, record.md);
        }
        return Blocks.add(flushes[2 * n], loc - sum, bw, record.md);
    }
}
