package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed-size run of bytes in a {@link BlobBacking} (off-heap by default), possibly larger than 2 GiB (stored as chunks), with a
 * reference count. The allocator's caller owns the first reference; {@link #retain()} adds one for a
 * reader and {@link #release()} gives one back; the memory returns to the {@link Allocator} when the
 * count reaches zero. Reads after the last release fail fast.
 *
 * <p>A {@link #slice} is a blob of its own over part of another's memory (many small entries of one
 * upload share one allocation): it holds a reference to the blob it was cut from, given back with its
 * own last reference, so the memory is freed once no slice nor the whole is referenced.
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
    /** Where this blob's first byte lies in {@link #chunks}: 0 but for a slice. */
    private final long base;
    /** The blob a slice was cut from (one reference held), else null. */
    private final Blob whole;

    Blob(Allocator owner, BlobBacking.Memory memory, long size, int chunkSize, boolean counted) {
        this.owner = owner;
        this.counted = counted;
        this.memory = memory;
        this.chunks = memory.chunks();
        this.size = size;
        this.chunkSize = chunkSize;
        this.base = 0;
        this.whole = null;
    }

    private Blob(Blob whole, long offset, long size) {
        this.owner = whole.owner;
        this.counted = false;
        this.memory = whole.memory;
        this.chunks = whole.chunks;
        this.chunkSize = whole.chunkSize;
        this.size = size;
        this.base = whole.base + offset;
        this.whole = whole;
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

    /** Gives a reference back; frees the memory with the last one (a slice gives back its whole's reference). */
    public void release() {
        int r = refs.decrementAndGet();
        if (r == 0) {
            if (whole != null) {
                whole.release();
            } else {
                owner.release(memory, counted ? size : 0);
            }
        } else if (r < 0) {
            throw new IllegalStateException("blob released more often than retained");
        }
    }

    /**
     * A blob of its own over bytes {@code [offset, offset+length)} of this one's memory, with one
     * reference owned by the caller; it holds a reference to this blob until its last release. The
     * memory is counted once, by this blob's allocation: a slice adds nothing to the budget, and
     * keeps all of the memory allocated while it is referenced. Writes through either are seen by
     * both (slices are cut from a blob already filled).
     */
    public Blob slice(long offset, long length) {
        checkRange(offset, length);
        retain();
        return new Blob(this, offset, length);
    }

    /** Where the bytes lie when they are in a {@link SharedSegment} a client on this host can map. */
    public java.util.Optional<SharedSegment.Location> sharedLocation() {
        if (!(memory instanceof SharedSegment.Slice s)) {
            return java.util.Optional.empty();
        }
        SharedSegment.Location l = s.location();
        return java.util.Optional.of(base == 0 ? l : new SharedSegment.Location(l.file(), l.nonce(), l.capacity(),
                l.offset() + base));
    }

    public int refCount() {
        return refs.get();
    }

    /** Sets every byte to zero (memory reused from earlier data, where zeros are expected). */
    public void zero() {
        for (long at = 0; at < size; ) {
            ByteBuffer c = chunks[chunkOf(at)];
            int co = inChunk(at);
            int len = (int) Math.min(size - at, c.capacity() - co);
            for (int done = 0; done < len; done += ZEROS.capacity()) {
                c.put(co + done, ZEROS, 0, Math.min(ZEROS.capacity(), len - done));
            }
            at += len;
        }
    }

    /** The chunk that holds this blob's byte {@code offset}. */
    private int chunkOf(long offset) {
        return (int) ((base + offset) / chunkSize);
    }

    /** Where this blob's byte {@code offset} lies in its chunk. */
    private int inChunk(long offset) {
        return (int) ((base + offset) % chunkSize);
    }

    /** Copies {@code src}'s remaining bytes to {@code offset}; advances {@code src}. */
    public void write(long offset, ByteBuffer src) {
        checkRange(offset, src.remaining());
        while (src.hasRemaining()) {
            ByteBuffer c = chunks[chunkOf(offset)];
            int co = inChunk(offset);
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
            ByteBuffer c = chunks[chunkOf(offset)];
            int co = inChunk(offset);
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
        int first = chunkOf(offset);
        int last = chunkOf(offset + length - 1);
        ByteBuffer[] out = new ByteBuffer[last - first + 1];
        long start = base + offset;
        for (int i = first; i <= last; i++) {
            long cStart = (long) i * chunkSize;
            int from = (int) Math.max(0, start - cStart);
            int to = (int) Math.min(chunks[i].capacity(), start + length - cStart);
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
        ByteBuffer c = chunks[chunkOf(offset)];
        int co = inChunk(offset);
        return c.slice(co, (int) Math.min(Math.min(max, c.capacity() - co), size - offset));
    }

    /** The view of bytes {@code [offset, offset+length)} when they lie in one chunk, else null. */
    public ByteBuffer viewInChunk(long offset, int length) {
        checkRange(offset, length);
        if (length == 0) {
            return ByteBuffer.allocate(0);
        }
        ByteBuffer c = chunks[chunkOf(offset)];
        int co = inChunk(offset);
        return co + length <= c.capacity() ? c.slice(co, length).asReadOnlyBuffer() : null;
    }

    /**
     * The whole blob as one borrowed buffer when it fits in a single chunk (the common case below
     * 1 GiB), else null; lets hot loops skip per-call chunk arithmetic.
     */
    public ByteBuffer singleChunk() {
        if (refs.get() <= 0) {
            throw new IllegalStateException("blob already released");
        }
        if (size == 0) {
            return ByteBuffer.allocate(0);
        }
        if (whole == null) {
            return chunks.length == 1 ? chunks[0] : null;
        }
        int co = inChunk(0);
        return chunkOf(size - 1) == chunkOf(0) ? chunks[chunkOf(0)].slice(co, (int) size) : null;
    }

    public byte get(long offset) {
        checkRange(offset, 1);
        return chunks[chunkOf(offset)].get(inChunk(offset));
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
