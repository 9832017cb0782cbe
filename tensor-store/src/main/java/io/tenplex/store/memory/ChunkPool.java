package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Freed chunk buffers kept for reuse, by capacity and bounded in bytes. A checkpoint re-saves tensors
 * of the same sizes every time, so the blob that replaces another finds the memory of the one it
 * replaced instead of faulting in (and zeroing) fresh pages. Buffers below {@link #MIN_CAPACITY} are
 * not kept: they are cheap to allocate. Buffers handed out hold old bytes; the caller zeroes them
 * when it promised zero-filled memory. Thread-safe.
 */
final class ChunkPool {
    /** Smallest buffer worth keeping. */
    static final int MIN_CAPACITY = 64 << 10;
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();

    private final long limit;
    private final Map<Integer, ArrayDeque<ByteBuffer>> free = new HashMap<>();
    private long bytes;

    /** @param limit most bytes kept; 0 keeps nothing */
    ChunkPool(long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("negative pool limit " + limit);
        }
        this.limit = limit;
    }

    /** A kept buffer of exactly {@code capacity} bytes (old content, position 0, big-endian), or null. */
    synchronized ByteBuffer take(int capacity) {
        ArrayDeque<ByteBuffer> q = free.get(capacity);
        ByteBuffer b = q == null ? null : q.poll();
        if (b == null) {
            return null;
        }
        if (q.isEmpty()) {
            free.remove(capacity);
        }
        bytes -= capacity;
        return b.clear().order(ByteOrder.BIG_ENDIAN);
    }

    /** Keeps {@code owner} for reuse; false when it is too small or the pool is full (the caller frees it). */
    synchronized boolean offer(ByteBuffer owner) {
        int c = owner.capacity();
        if (c < MIN_CAPACITY || bytes + c > limit) {
            return false;
        }
        free.computeIfAbsent(c, k -> new ArrayDeque<>()).push(owner);
        bytes += c;
        return true;
    }

    /** Removes kept buffers holding at least {@code want} bytes (or all); the caller frees them. */
    synchronized ArrayDeque<ByteBuffer> drain(long want) {
        ArrayDeque<ByteBuffer> out = new ArrayDeque<>();
        long got = 0;
        for (Iterator<ArrayDeque<ByteBuffer>> it = free.values().iterator(); it.hasNext() && got < want; ) {
            ArrayDeque<ByteBuffer> q = it.next();
            while (!q.isEmpty() && got < want) {
                ByteBuffer b = q.poll();
                got += b.capacity();
                out.add(b);
            }
            if (q.isEmpty()) {
                it.remove();
            }
        }
        bytes -= got;
        return out;
    }

    synchronized long bytes() {
        return bytes;
    }

    long limit() {
        return limit;
    }

    /** Overwrites {@code chunk} (all of its capacity) with zeros. */
    static void zero(ByteBuffer chunk) {
        int n = chunk.capacity();
        for (int off = 0; off < n; off += ZEROS.capacity()) {
            chunk.put(off, ZEROS, 0, Math.min(ZEROS.capacity(), n - off));
        }
    }
}
