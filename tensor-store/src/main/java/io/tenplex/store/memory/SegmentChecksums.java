package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The block checksums of consecutive segments of one blob's bytes, each segment's blocks counted from
 * its own first byte, computed while the bytes arrive in order: the entries of an upload that share
 * one allocation ({@link Blob#slice}) each get the checksums a blob of their own would have. One
 * running CRC serves every segment, since they are fed one after the other.
 */
final class SegmentChecksums {
    private final long[] sizes;
    private final int blockSize;
    private final int[][] crcs;
    private final CRC32C current = new CRC32C();
    private int at;
    /** Bytes of segment {@link #at} fed so far. */
    private long inSegment;

    /**
     * @param sizes each segment's bytes, in order, as checked by {@link #total}
     * (their sum is the blob's size, allocated first: the checksums' arrays are bounded by it)
     */
    SegmentChecksums(long[] sizes, int blockSize) {
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size " + blockSize);
        }
        this.sizes = sizes.clone();
        this.blockSize = blockSize;
        this.crcs = new int[sizes.length][];
        for (int i = 0; i < sizes.length; i++) {
            crcs[i] = new int[BlockChecksums.blocks(sizes[i], blockSize)];
        }
        skipFull();
    }

    /**
     * The sum of {@code sizes}.
     *
     * @throws IllegalArgumentException when a size is negative
     * @throws ArithmeticException when the sum overflows
     */
    static long total(long[] sizes) {
        long sum = 0;
        for (int i = 0; i < sizes.length; i++) {
            if (sizes[i] < 0) {
                throw new IllegalArgumentException("segment " + i + " has a negative size " + sizes[i]);
            }
            sum = Math.addExact(sum, sizes[i]);
        }
        return sum;
    }

    /** Feeds the next bytes (the buffer's remaining bytes; its position does not move). */
    void update(ByteBuffer data) {
        int pos = data.position();
        int left = data.remaining();
        while (left > 0) {
            long inBlock = inSegment % blockSize;
            int n = (int) Math.min(left, Math.min(blockSize - inBlock, sizes[at] - inSegment));
            current.update(data.slice(pos, n));
            pos += n;
            left -= n;
            inSegment += n;
            if (inSegment % blockSize == 0 || inSegment == sizes[at]) {
                crcs[at][(int) ((inSegment - 1) / blockSize)] = (int) current.getValue();
                current.reset();
            }
            skipFull();
        }
    }

    /** Moves past the current segment while it is complete (or empty). */
    private void skipFull() {
        while (at < sizes.length && inSegment == sizes[at]) {
            at++;
            inSegment = 0;
        }
    }

    /** Each segment's checksums, in order; every byte must have been fed. */
    BlockChecksums[] build() {
        if (at != sizes.length) {
            throw new IllegalStateException("segment " + at + " of " + sizes.length + " is not complete");
        }
        BlockChecksums[] out = new BlockChecksums[sizes.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = new BlockChecksums(blockSize, sizes[i], crcs[i]);
        }
        return out;
    }
}
