package io.tenplex.datasets.hdf5;

import java.nio.ByteBuffer;

/**
 * A decoded block of an array source: its bytes {@code [begin, begin + bytes.remaining())} of the
 * array (C order, as stored), decoded together, so that a loader holding one of its rows can take
 * the others without decoding them again.
 *
 * @param begin the offset of the block's first byte in the array
 * @param bytes the block's bytes, read-only and borrowed (shared with the cache: do not keep it)
 */
public record ArrayBlock(long begin, ByteBuffer bytes) {
    /** The offset just past the block's last byte. */
    public long end() {
        return begin + bytes.remaining();
    }

    /** The bytes {@code [from, from + length)} of the array, which must lie in this block (a read-only view). */
    public ByteBuffer slice(long from, int length) {
        if (from < begin || from > end() - length || length < 0) {
            throw new IndexOutOfBoundsException("bytes " + from + "+" + length + " outside block " + begin + ":" + end());
        }
        return bytes.slice(bytes.position() + (int) (from - begin), length);
    }
}
