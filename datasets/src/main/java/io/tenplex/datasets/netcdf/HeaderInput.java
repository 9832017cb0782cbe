package io.tenplex.datasets.netcdf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Big-endian reads of a classic file's header from its start, through a buffer of
 * {@link #BUFFER_BYTES}: every read is checked against the file's size first, so a header that
 * claims more than the file holds is refused ({@link IllegalArgumentException} naming the file, the
 * field and the offsets) before anything is allocated for it. Not thread-safe.
 */
final class HeaderInput {
    static final int BUFFER_BYTES = 64 << 10;
    /** The longest name read (NetCDF's limit is 256 characters of UTF-8). */
    static final int MAX_NAME_BYTES = 4096;

    private final FileChannel channel;
    private final long size;
    private final String file;
    private final ByteBuffer buf = ByteBuffer.allocate(BUFFER_BYTES);
    private long bufStart; // the file offset of buf's byte 0
    private long pos;

    HeaderInput(FileChannel channel, long size, String file) {
        this.channel = channel;
        this.size = size;
        this.file = file;
        buf.limit(0);
    }

    long position() {
        return pos;
    }

    long size() {
        return size;
    }

    /** The bytes of the file after the current position. */
    long remaining() {
        return size - pos;
    }

    int int32(String field) {
        return ensure(4, field).getInt((int) (pos - bufStart) - 4);
    }

    long int64(String field) {
        return ensure(8, field).getLong((int) (pos - bufStart) - 8);
    }

    /** A 32-bit ({@code wide} false) or 64-bit field, as a signed long. */
    long number(boolean wide, String field) {
        return wide ? int64(field) : int32(field);
    }

    /** A non-negative 32- or 64-bit count or size. */
    long nonNegative(boolean wide, String field) {
        long v = number(wide, field);
        if (v < 0) {
            throw bad(field + " is " + v + " (expected: a non-negative " + (wide ? 64 : 32) + "-bit number)");
        }
        return v;
    }

    /** Moves past {@code n} bytes, which must lie within the file. */
    void skip(long n, String field) {
        if (n < 0 || n > remaining()) {
            throw truncated(n, field);
        }
        pos += n;
        if (pos > bufStart + buf.limit()) {
            bufStart = pos;
            buf.limit(0);
        }
    }

    /** A name: its length, its UTF-8 bytes, padding to 4 bytes. */
    String name(boolean wide, String field) {
        long n = nonNegative(wide, field + " length");
        if (n == 0 || n > MAX_NAME_BYTES) {
            throw bad(field + " has " + n + " bytes (expected: 1 to " + MAX_NAME_BYTES + ")");
        }
        int len = (int) n;
        ByteBuffer b = ensure(len, field);
        ByteBuffer bytes = b.duplicate().position((int) (pos - bufStart) - len).limit((int) (pos - bufStart));
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(bytes).toString();
        } catch (CharacterCodingException e) {
            throw bad(field + " at byte " + (pos - len) + " is not UTF-8");
        }
        skip(pad(len) - len, field + " padding");
        return s;
    }

    /** {@code n} rounded up to a multiple of 4. */
    static long pad(long n) {
        return Math.addExact(n, 3) & ~3L;
    }

    /** Makes {@code n} bytes from the position readable in {@link #buf}, moves past them; buf. */
    private ByteBuffer ensure(int n, String field) {
        if (n > remaining()) {
            throw truncated(n, field);
        }
        long end = bufStart + buf.limit();
        if (pos < bufStart || pos + n > end) {
            buf.clear();
            bufStart = pos;
            int want = (int) Math.min(BUFFER_BYTES, size - pos);
            buf.limit(want);
            try {
                while (buf.hasRemaining()) {
                    if (channel.read(buf, bufStart + buf.position()) < 0) {
                        throw bad("ends at byte " + (bufStart + buf.position()) + " while being read (its size was " + size
                                + ")");
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            buf.position(0);
        }
        pos += n;
        return buf;
    }

    private IllegalArgumentException truncated(long n, String field) {
        return bad("truncated header: " + field + " needs bytes " + pos + ".." + (pos + n) + " but the file has "
                + size);
    }

    IllegalArgumentException bad(String what) {
        return new IllegalArgumentException("NetCDF classic file " + file + ": " + what);
    }
}
