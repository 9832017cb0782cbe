package io.tenplex.datasets.adios2;

import java.nio.charset.StandardCharsets;

/**
 * Little-endian reads of one metadata file of an ADIOS2 directory (read whole into memory), each
 * checked against its length: a read past the end is refused with an {@link IllegalArgumentException}
 * naming the directory, the file, the field and the offsets. Immutable.
 */
final class MetaBytes {
    final byte[] bytes;
    /** The directory and file, for messages: {@code ADIOS2 file <dir>: md.idx}. */
    final String where;

    MetaBytes(byte[] bytes, String where) {
        this.bytes = bytes;
        this.where = where;
    }

    int length() {
        return bytes.length;
    }

    /** Refuses unless bytes {@code [pos, pos + n)} lie within the file. */
    void need(long pos, long n, String field) {
        if (pos < 0 || n < 0 || pos > bytes.length || n > bytes.length - pos) {
            throw bad("truncated: " + field + " needs bytes " + pos + ".." + (n < 0 || pos < 0 ? "(overflow)"
                    : pos + n > pos ? String.valueOf(pos + n) : "(overflow)") + " but it has " + bytes.length);
        }
    }

    int u8(long pos, String field) {
        need(pos, 1, field);
        return bytes[(int) pos] & 0xFF;
    }

    /** A big-endian (network order) 16-bit number, as FFS writes its lengths. */
    int u16be(long pos, String field) {
        need(pos, 2, field);
        return (bytes[(int) pos] & 0xFF) << 8 | bytes[(int) pos + 1] & 0xFF;
    }

    int u16(long pos, String field) {
        need(pos, 2, field);
        return bytes[(int) pos] & 0xFF | (bytes[(int) pos + 1] & 0xFF) << 8;
    }

    /** A 32-bit number, unsigned. */
    long u32(long pos, String field) {
        need(pos, 4, field);
        long v = 0;
        for (int i = 3; i >= 0; i--) {
            v = v << 8 | bytes[(int) pos + i] & 0xFF;
        }
        return v;
    }

    /** A 64-bit number as stored (an unsigned one over {@link Long#MAX_VALUE} is negative). */
    long i64(long pos, String field) {
        need(pos, 8, field);
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = v << 8 | bytes[(int) pos + i] & 0xFF;
        }
        return v;
    }

    /** A 64-bit count, size or offset: refused if over {@code max}. */
    long size(long pos, long max, String field) {
        long v = i64(pos, field);
        if (v < 0 || v > max) {
            throw bad(field + " is " + Long.toUnsignedString(v) + " (at most " + max + " here)");
        }
        return v;
    }

    /** The NUL-terminated string at {@code pos} (UTF-8), within {@code [pos, end)}. */
    String cString(long pos, long end, String field) {
        need(pos, 1, field);
        long stop = Math.min(end, bytes.length);
        for (long i = pos; i < stop; i++) {
            if (bytes[(int) i] == 0) {
                return new String(bytes, (int) pos, (int) (i - pos), StandardCharsets.UTF_8);
            }
        }
        throw bad("truncated: " + field + " at byte " + pos + " has no end");
    }

    IllegalArgumentException bad(String what) {
        return new IllegalArgumentException(where + ": " + what);
    }
}
