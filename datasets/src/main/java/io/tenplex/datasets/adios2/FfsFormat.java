package io.tenplex.datasets.adios2;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One FFS format, as the BP5 writer registers it in {@code mmd.0}: a C struct's name, its record
 * length and fields ({@code name}, {@code type} as FFS spells it, e.g. {@code integer},
 * {@code integer[Dims]}, {@code MetaArrayMM8}, and the size and offset of each in the record), and the
 * formats of the structs its fields embed, by name. Parsed from FFS's wire representation (server
 * rep version 2, {@code _format_wire_format_1} and {@code _subformat_wire_format_1} of FFS's
 * {@code fm_internal.h}). Immutable.
 */
final class FfsFormat {
    /** The most fields of one struct. */
    static final int MAX_FIELDS = 1 << 16;

    /** One field of a struct. */
    record Field(String name, String type, int size, int offset) {}

    final String name;
    final int recordLength;
    final List<Field> fields;
    /** The formats of the structs embedded, by name (this one's included). */
    final Map<String, FfsFormat> structs;
    /** The first field of each name: looked up per record, so not a scan of up to 2^16 fields. */
    private final Map<String, Field> byName = new HashMap<>();

    private FfsFormat(String name, int recordLength, List<Field> fields, Map<String, FfsFormat> structs) {
        this.name = name;
        this.recordLength = recordLength;
        this.fields = fields;
        this.structs = structs;
        fields.forEach(f -> byName.putIfAbsent(f.name(), f));
    }

    /** The (first) field called {@code name}, or null. */
    Field field(String fieldName) {
        return byName.get(fieldName);
    }

    /**
     * Parses the format representation of {@code len} bytes at {@code pos} of {@code mmd}: its first
     * struct is the top one, the {@code subformat_count} after it those it embeds.
     */
    static FfsFormat parse(MetaBytes mmd, long pos, long len) {
        String what = "the format at byte " + pos;
        mmd.need(pos, len, what);
        long repLength = (long) mmd.u16be(pos + 6, what) << 16 | mmd.u16be(pos, what);
        int version = mmd.u8(pos + 3, what);
        int count = mmd.u8(pos + 4, what) + 1; // the top struct and its subformats
        if (repLength != len || version != 2 || mmd.u8(pos + 2, what) != 0) {
            throw mmd.bad(what + " is not an FFS format representation this reader knows (length " + repLength
                    + " of " + len + ", version " + version + ", " + count + " structs, byte order "
                    + mmd.u8(pos + 2, what) + ")");
        }
        Map<String, FfsFormat> structs = new HashMap<>();
        FfsFormat top = null;
        long sub = pos + 8;
        for (int i = 0; i < count; i++) {
            long subLength = (long) mmd.u16be(sub + 24, what) << 16 | mmd.u16be(sub, what);
            if (subLength < 28 || subLength > pos + len - sub) {
                throw mmd.bad(what + ": struct " + i + " has length " + subLength + ", beyond the format");
            }
            FfsFormat f = struct(mmd, sub, subLength, structs);
            top = top == null ? f : top;
            structs.put(f.name, f);
            sub += subLength;
        }
        return top;
    }

    private static FfsFormat struct(MetaBytes mmd, long sub, long subLength, Map<String, FfsFormat> structs) {
        String what = "the FFS struct at byte " + sub;
        long end = sub + subLength;
        if (mmd.u8(sub + 3, what) != 0 || mmd.u8(sub + 16, what) != 8) {
            throw mmd.bad(what + " is not little-endian with 8-byte pointers");
        }
        String name = mmd.cString(sub + mmd.u32(sub + 4, what), end, what + ": its name");
        long count = mmd.u32(sub + 8, what);
        long recordLength = mmd.u32(sub + 12, what);
        int header = mmd.u8(sub + 17, what);
        if (count > MAX_FIELDS || header < 28 || header + 16 * count > subLength || recordLength > Integer.MAX_VALUE) {
            throw mmd.bad(what + " (" + name + ") has " + count + " fields of a record of " + recordLength
                    + " bytes in " + subLength + " bytes");
        }
        List<Field> fields = new ArrayList<>();
        Strings strings = new Strings(mmd, sub, subLength, what + " (" + name + ")");
        strings.mark(mmd.u32(sub + 4, what));
        for (int i = 0; i < count; i++) {
            long f = sub + header + 16L * i;
            String fw = what + " (" + name + "): field " + i;
            long size = mmd.u32(f + 8, fw);
            long offset = mmd.u32(f + 12, fw);
            if (size > recordLength || offset > recordLength - size) {
                throw mmd.bad(fw + " lies at bytes " + offset + "+" + size + ", outside its record of " + recordLength);
            }
            fields.add(new Field(strings.at(mmd.u32(f, fw), fw + " name"), strings.at(mmd.u32(f + 4, fw), fw + " type"),
                    (int) size, (int) offset));
        }
        return new FfsFormat(name, (int) recordLength, List.copyOf(fields), structs);
    }

    /**
     * The NUL-terminated strings of one struct (its name, its fields' names and types), each at its own
     * bytes: FFS writes every string once, so strings that overlap (which could make a small format
     * name gigabytes of field names, all kept) are refused.
     */
    private static final class Strings {
        private final MetaBytes mmd;
        private final long sub;
        private final long end;
        private final String what;
        private final java.util.BitSet used = new java.util.BitSet();

        Strings(MetaBytes mmd, long sub, long subLength, String what) {
            this.mmd = mmd;
            this.sub = sub;
            this.end = sub + subLength;
            this.what = what;
        }

        /** The string at {@code offset} of the struct, checked not to overlap one read before. */
        String at(long offset, String field) {
            String s = mmd.cString(sub + offset, end, field);
            mark(offset);
            return s;
        }

        /** Marks the string at {@code offset} (read before: its NUL lies in the struct) as used; refuses it if it was. */
        void mark(long offset) {
            int from = (int) offset; // within the struct, which is within the file
            int to = from;
            while (mmd.bytes[(int) sub + to] != 0) {
                to++;
            }
            to++;
            int taken = used.nextSetBit(from);
            if (taken >= 0 && taken < to) {
                throw mmd.bad(what + ": the string at struct byte " + offset + " overlaps another name or type");
            }
            used.set(from, to);
        }
    }
}
