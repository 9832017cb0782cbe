package io.tenplex.datasets.adios2;

/**
 * One FFS-encoded record of {@code md.0} (a BP5 writer's metadata of one step), read in place: the
 * header (the 12-byte format ID, the record's length as 8 bytes, padding to 8) and the record in the
 * writer's layout (little-endian, 8-byte pointers), whose pointers are offsets from the record's
 * start to the variable-length parts after it. Every read is checked to lie within the record.
 * Immutable.
 */
final class FfsRecord {
    static final int ID_BYTES = 12;
    static final int HEADER_BYTES = 24;

    final MetaBytes md;
    final FfsFormat format;
    private final long base;
    private final long length;
    private final String what;

    private FfsRecord(MetaBytes md, FfsFormat format, long base, long length, String what) {
        this.md = md;
        this.format = format;
        this.base = base;
        this.length = length;
        this.what = what;
    }

    /** The format ID of the record at {@code pos}, as hex. */
    static String id(MetaBytes md, long pos, String what) {
        md.need(pos, ID_BYTES, what + ": its format ID");
        int version = md.u8(pos, what);
        if (version != 2 && version != 3) {
            throw md.bad(what + " has format ID version " + version + " (expected 2 or 3)");
        }
        return hex(md.bytes, (int) pos, ID_BYTES);
    }

    /** The record of {@code size} bytes at {@code pos}, whose format is {@code format}. */
    static FfsRecord at(MetaBytes md, long pos, long size, FfsFormat format, String what) {
        md.need(pos, size, what);
        long length = md.size(pos + ID_BYTES, size, what + ": its length");
        if (HEADER_BYTES + length > size || length < format.recordLength) {
            throw md.bad(what + " has length " + length + " in a block of " + size + " bytes (its format "
                    + format.name + " needs " + format.recordLength + ")");
        }
        return new FfsRecord(md, format, pos + HEADER_BYTES, length, what);
    }

    static String hex(byte[] b, int from, int n) {
        StringBuilder s = new StringBuilder();
        for (int i = from; i < from + n; i++) {
            s.append(String.format("%02x", b[i] & 0xFF));
        }
        return s.toString();
    }

    /** The 8-byte number at {@code at} of the record, refused if over {@code max}. */
    long number(long at, long max, String field) {
        within(at, 8, field);
        return md.size(base + at, max, what + ": " + field);
    }

    /**
     * The {@code count} 8-byte numbers the pointer at {@code at} points to, each at most {@code max},
     * or null for a NULL pointer.
     */
    long[] numbers(long at, long count, long max, String field) {
        return numbers(at, count, max, false, field);
    }

    /** The {@code count} 64-bit words (bit fields) the pointer at {@code at} points to, or null for NULL. */
    long[] words(long at, long count, String field) {
        return numbers(at, count, 0, true, field);
    }

    private long[] numbers(long at, long count, long max, boolean raw, String field) {
        long p = number(at, length, field + " (its offset)");
        if (p == 0) {
            return null;
        }
        if (count < 0 || count > (length - p) / 8) {
            throw md.bad(what + ": " + field + " has " + count + " numbers at record byte " + p + ", beyond its "
                    + length + " bytes");
        }
        long[] v = new long[(int) count];
        for (int i = 0; i < count; i++) {
            String name = what + ": " + field + "[" + i + "]";
            v[i] = raw ? md.i64(base + p + 8L * i, name) : md.size(base + p + 8L * i, max, name);
        }
        return v;
    }

    private void within(long at, long n, String field) {
        if (at < 0 || at > length - n) {
            throw md.bad(what + ": " + field + " at record byte " + at + " lies beyond its " + length + " bytes");
        }
    }

    IllegalArgumentException bad(String why) {
        return md.bad(what + ": " + why);
    }
}
