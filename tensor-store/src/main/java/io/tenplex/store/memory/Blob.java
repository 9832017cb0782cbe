package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed-size run of bytes in a {@link BlobBacking} (off-heap by default), possibly larger than 2 GiB (stored as chunks), with a
 * reference count. The allocator's caller owns the first reference; {@link #retain()} adds one for a
 * reader and {@link #release()} gives one back; the memory returns to the {@link Allocator} when the
 * count reaches zero. Reads after the last release fail fast.
 *
 * <p>Writes are not synchronised: a blob is filled by one writer before it is published.
 */
public final class Blob {
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();
    private final Allocator owner;
    private final BlobBacking.Memory memory;
    private final ByteBuffer[] chunks;
    private final long size;
    private final int chunkSize;
    private final AtomicInteger refs = new AtomicInteger(1);
    private final boolean counted;

    Blob(Allocator owner, BlobBacking.Memory memory, long size, int chunkSize, boolean counted) {
        this.owner = owner;
        this.counted = counted;
        this.memory = memory;
        this.chunks = memory.chunks();
        this.size = size;
        this.chunkSize = chunkSize;
    }

    public long size() {
        return size;
    }

    /** Adds a reference; returns this. */
    public Blob retain() {
        while (true) {
            int r = refs.get();
            if (r <= 0) {
                throw new IllegalStateException("blob already released");
            }
            if (refs.compareAndSet(r, r + 1)) {
                return this;
            }
        }
    }

    /** Gives a reference back; frees the memory with the last one. */
    public void release() {
        int r = refs.decrementAndGet();
        if (r == 0) {
            owner.release(memory, counted ? size : 0);
        } else if (r < 0) {
            throw new IllegalStateException("blob released more often than retained");
        }
    }

    /** Where the bytes lie when they are in a {@link SharedSegment} a client on this host can map. */
    public java.util.Optional<SharedSegment.Location> sharedLocation() {
        return memory instanceof SharedSegment.Slice s ? java.util.Optional.of(s.location()) : java.util.Optional.empty();
    }

    public int refCount() {
        return refs.get();
    }

    /** Sets every byte to zero (memory reused from earlier data, where zeros are expected). */
    public void zero() {
        long left = size;
        for (int i = 0; left > 0; i++) {
            int len = (int) Math.min(left, chunks[i].capacity());
            for (int at = 0; at < len; at += ZEROS.capacity()) {
                chunks[i].put(at, ZEROS, 0, Math.min(ZEROS.capacity(), len - at));
            }
            left -= len;
        }
    }

    /** Copies {@code src}'s remaining bytes to {@code offset}; advances {@code src}. */
    public void write(long offset, ByteBuffer src) {
        checkRange(offset, src.remaining());
        while (src.hasRemaining()) {
            int ci = (int) (offset / chunkSize);
            int co = (int) (offset % chunkSize);
            ByteBuffer c = chunks[ci];
            int n = Math.min(src.remaining(), c.capacity() - co);
            c.put(co, src, src.position(), n);
            src.position(src.position() + n);
            offset += n;
        }
    }

    /** Copies {@code length} bytes at {@code offset} into {@code dst} at its position; advances {@code dst}. */
    public void copyTo(long offset, long length, ByteBuffer dst) {
        checkRange(offset, length);
        int p = dst.position();
        while (length > 0) {
            int ci = (int) (offset / chunkSize);
            int co = (int) (offset % chunkSize);
            ByteBuffer c = chunks[ci];
            int n = (int) Math.min(length, c.capacity() - co);
            dst.put(p, c, co, n);
            p += n;
            offset += n;
            length -= n;
        }
        dst.position(p);
    }

    /**
     * Read-only views of {@code length} bytes at {@code offset}: one buffer unless the bytes cross a
     * chunk boundary. The views are borrowed: valid while the caller holds a reference.
     */
    public ByteBuffer[] views(long offset, long length) {
        checkRange(offset, length);
        if (length == 0) {
            return new ByteBuffer[0];
        }
        int first = (int) (offset / chunkSize);
        int last = (int) ((offset + length - 1) / chunkSize);
        ByteBuffer[] out = new ByteBuffer[last - first + 1];
        for (int i = first; i <= last; i++) {
            long cStart = (long) i * chunkSize;
            int from = (int) Math.max(0, offset - cStart);
            int to = (int) Math.min(chunks[i].capacity(), offset + length - cStart);
            out[i - first] = chunks[i].slice(from, to - from).asReadOnlyBuffer();
        }
        return out;
    }

    /**
     * A writable view of at most {@code max} bytes from {@code offset} up to the end of the chunk that
     * holds {@code offset} (empty at the blob's end): where a receiver may place bytes directly, e.g.
     * a socket read into a blob being filled. Borrowed: valid while the caller holds a reference.
     * Only for a blob's writer before the blob is published.
     */
    public ByteBuffer writableView(long offset, int max) {
        checkRange(offset, 0);
        if (max < 0) {
            throw new IllegalArgumentException("negative length " + max);
        }
        if (offset == size) {
            return ByteBuffer.allocateDirect(0);
        }
        int ci = (int) (offset / chunkSize);
        int co = (int) (offset % chunkSize);
        return chunks[ci].slice(co, Math.min(max, chunks[ci].capacity() - co));
    }

    /** The view of bytes {@code [offset, offset+length)} when they lie in one chunk, else null. */
    public ByteBuffer viewInChunk(long offset, int length) {
        checkRange(offset, length);
        if (length == 0) {
            return ByteBuffer.allocate(0);
        }
        int ci = (int) (offset / chunkSize);
        int co = (int) (offset % chunkSize);
        return co + length <= chunks[ci].capacity() ? chunks[ci].slice(co, length).asReadOnlyBuffer() : null;
    }

    /**
     * The whole blob as one borrowed buffer when it fits in a single chunk (the common case below
     * 1 GiB), else null; lets hot loops skip per-call chunk arithmetic.
     */
    public ByteBuffer singleChunk() {
        if (refs.get() <= 0) {
            throw new IllegalStateException("blob already released");
        }
        return chunks.length == 1 ? chunks[0] : size == 0 ? ByteBuffer.allocate(0) : null;
    }

    public byte get(long offset) {
        checkRange(offset, 1);
        return chunks[(int) (offset / chunkSize)].get((int) (offset % chunkSize));
    }

    private void checkRange(long offset, long length) {
        if (refs.get() <= 0) {
            throw new IllegalStateException("blob already released");
        }
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IndexOutOfBoundsException("bytes " + offset + "+" + length + " outside blob of " + size);
        }
    }
}
