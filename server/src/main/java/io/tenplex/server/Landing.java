package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.tenplex.store.memory.Blob;
import java.nio.ByteBuffer;

/**
 * A socket read's buffer over the unfilled memory of a blob being uploaded: the body's bytes land in
 * their final place, with no copy out of a receive buffer (see {@link LandingAllocator}).
 *
 * <p>Ownership: the buffer holds a reference to the blob from its creation until its own last
 * release, so the memory cannot be freed or reused while a handler still holds the buffer (an
 * upload aborted while a read is in flight, for instance). Once bytes were read into it, it reports
 * itself read-only, so that a decoder accumulating input copies later reads elsewhere instead of
 * appending them into the blob, and it never compacts itself (a decoder's discarding of read bytes
 * would move unread bytes over bytes the blob already holds). Once every received byte was consumed, the sink gives the blob's
 * reference back early ({@link #detach()}), so an upload's memory is accounted for exactly when it
 * answers.
 */
final class Landing extends UnpooledUnsafeDirectByteBuf {
    private final Blob blob;
    private final long offset;
    private boolean detached;

    /**
     * @param blob the blob; this takes a reference of its own
     * @param offset where {@code memory} starts in the blob
     * @param memory the blob's unfilled memory at {@code offset} (from
     *     {@link io.tenplex.store.memory.BlobWriter#unfilled}), not empty
     */
    Landing(Blob blob, long offset, ByteBuffer memory) {
        super(UnpooledByteBufAllocator.DEFAULT, memory, memory.remaining());
        this.blob = blob.retain();
        this.offset = offset;
        clear(); // empty, all of it writable by the socket read
    }

    /** Where this buffer's first byte lies in the blob. */
    long offset() {
        return offset;
    }

    /**
     * The blob offset of {@code data}'s first readable byte when its bytes lie in this buffer's
     * received bytes, else -1. A decoder hands the body on as slices of the buffer it read into.
     */
    long blobOffsetOf(ByteBuf data) {
        if (detached || refCnt() == 0 || !data.hasMemoryAddress()) {
            return -1;
        }
        long at = data.memoryAddress() + data.readerIndex() - memoryAddress();
        return at >= 0 && at + data.readableBytes() <= writerIndex() ? offset + at : -1;
    }

    /**
     * Gives the blob's reference back now if every byte read into this buffer was consumed: nothing
     * reads the memory through it any more, and nothing writes it (read-only once filled). Otherwise
     * the reference stays until the buffer's last release.
     */
    void detach() {
        if (!detached && refCnt() > 0 && !isReadable()) {
            detached = true;
            blob.release();
        }
    }

    @Override
    public boolean isReadOnly() {
        return writerIndex() > 0;
    }

    /** Never moves bytes: the memory before the reader index holds bytes already accepted into the blob. */
    @Override
    public ByteBuf discardReadBytes() {
        return this;
    }

    @Override
    public ByteBuf discardSomeReadBytes() {
        return this;
    }

    @Override
    protected void deallocate() {
        super.deallocate(); // does not free the memory: it is the blob's
        if (!detached) {
            detached = true;
            blob.release();
        }
    }
}
