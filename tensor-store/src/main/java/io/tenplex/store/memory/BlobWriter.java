package io.tenplex.store.memory;

import java.nio.ByteBuffer;

/**
 * Fills a new blob of known size with bytes arriving in order (an upload), computing its block
 * checksums on the way. Owns the blob until {@link #take()}; {@link #close()} frees it otherwise, so
 * an abandoned upload leaves no memory behind.
 */
public final class BlobWriter implements AutoCloseable {
    private final Blob blob;
    private final BlockChecksums.Builder sums;
    private final SegmentChecksums segments;
    private long written;
    private boolean owned = true;

    private BlobWriter(Blob blob, int block) {
        this.blob = blob;
        this.sums = new BlockChecksums.Builder(blob.size(), block);
        this.segments = null;
    }

    private BlobWriter(Blob blob, SegmentChecksums segments) {
        this.blob = blob;
        this.sums = null;
        this.segments = segments;
    }

    /**
     * A writer of a blob whose memory is not zeroed first ({@link Allocator#allocateForOverwrite}):
     * {@link #take()} hands it out only once every byte has been written.
     *
     * @throws OutOfBudgetException when the bytes do not fit the budget
     */
    public static BlobWriter allocate(Allocator allocator, long size, int checksumBlock) {
        return new BlobWriter(allocator.allocateForOverwrite(size), checksumBlock);
    }

    /**
     * A writer of one blob holding consecutive segments of {@code sizes} bytes (entries that will be
     * {@link Blob#slice}s of it), whose checksums are computed per segment, from each segment's first
     * byte ({@link #segmentChecksums()}), rather than over the whole. Otherwise as {@link #allocate}.
     *
     * @throws IllegalArgumentException when a size is negative; nothing is allocated
     * @throws ArithmeticException when their sum overflows; nothing is allocated
     * @throws OutOfBudgetException when the bytes do not fit the budget
     */
    public static BlobWriter allocateSegmented(Allocator allocator, long[] sizes, int checksumBlock) {
        long total = SegmentChecksums.total(sizes);
        Blob blob = allocator.allocateForOverwrite(total); // within the budget before any checksum array
        try {
            return new BlobWriter(blob, new SegmentChecksums(sizes, checksumBlock));
        } catch (RuntimeException | Error e) {
            blob.release();
            throw e;
        }
    }

    private void feed(ByteBuffer data) {
        if (sums != null) {
            sums.update(data);
        } else {
            segments.update(data);
        }
    }

    /**
     * Appends {@code data}'s remaining bytes (consumed).
     *
     * @throws IllegalArgumentException when they would go past the blob's size; nothing is written
     */
    public void append(ByteBuffer data) {
        int n = data.remaining();
        if (n > blob.size() - written) {
            throw new IllegalArgumentException("body longer than the expected " + blob.size() + " bytes");
        }
        feed(data);
        blob.write(written, data);
        written += n;
    }

    /**
     * The unfilled memory right after the written bytes: at most {@code max} bytes, within one chunk
     * (empty when the blob is full). A receiver may place the next bytes there (a socket read straight
     * into the blob) and then accept them with {@link #appendInPlace}; until then they are not part
     * of the blob. Borrowed from this writer: valid while it owns the blob or the caller holds a
     * reference of its own ({@link Blob#retain()} on {@link #peek()}).
     */
    public ByteBuffer unfilled(int max) {
        return blob.writableView(written, max);
    }

    /**
     * Accepts the next {@code n} bytes, already placed at {@link #written()} (through
     * {@link #unfilled}), computing their block checksums now, while they are likely still in cache.
     *
     * @throws IllegalArgumentException when they would go past the blob's size; nothing is accepted
     */
    public void appendInPlace(int n) {
        if (n < 0 || n > blob.size() - written) {
            throw new IllegalArgumentException("body longer than the expected " + blob.size() + " bytes");
        }
        ByteBuffer placed = blob.viewInChunk(written, n);
        if (placed != null) {
            feed(placed);
        } else {
            for (ByteBuffer v : blob.views(written, n)) {
                feed(v);
            }
        }
        written += n;
    }

    public long written() {
        return written;
    }

    public long size() {
        return blob.size();
    }

    public boolean isComplete() {
        return written == blob.size();
    }

    /** The filled blob's checksums (not for a segmented writer: see {@link #segmentChecksums()}). */
    public BlockChecksums checksums() {
        if (sums == null) {
            throw new IllegalStateException("a segmented writer has checksums per segment");
        }
        return sums.build();
    }

    /** The checksums of each segment of a filled segmented writer ({@link #allocateSegmented}), in order. */
    public BlockChecksums[] segmentChecksums() {
        if (segments == null) {
            throw new IllegalStateException("not a segmented writer");
        }
        return segments.build();
    }

    /**
     * The blob being filled, borrowed (still owned by this writer). Only its first {@link #written()}
     * bytes are defined.
     */
    public Blob peek() {
        return blob;
    }

    /** Transfers the blob's reference to the caller (after which close does nothing). */
    public Blob take() {
        if (!isComplete()) {
            throw new IllegalStateException("blob has " + written + " of " + blob.size() + " bytes");
        }
        owned = false;
        return blob;
    }

    @Override
    public void close() {
        if (owned) {
            owned = false;
            blob.release();
        }
    }
}
