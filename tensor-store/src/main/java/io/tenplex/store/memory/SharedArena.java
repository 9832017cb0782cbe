package io.tenplex.store.memory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Blobs placed one after the other in shared-memory segments, for data the daemon writes itself (a
 * reconfiguration's new shards) and clients on this host then map to load, with no copy between. The
 * arena is told the sizes it will be asked for, in order ({@link #expect}), and takes segments for them
 * as it goes: kept ones first (recycled: their pages were touched before), a new one only for what no
 * kept one fits. Each blob holds a reference to its segment; the arena's own references go at
 * {@link #close()}, so a segment returns to its {@link SharedSegments} with its last blob.
 *
 * <p>Not thread-safe: blobs are taken by one thread (the executor opens shards in order).
 */
public final class SharedArena implements AutoCloseable {
    private final SharedSegments segments;
    private final Allocator allocator;
    private final List<SharedSegment> held = new ArrayList<>();
    private long[] expected = new long[0];
    private int next;
    private SharedSegment current;
    private long at;
    private long recycledBytes;
    private long freshBytes;
    private int freshSegments;
    private boolean currentRecycled;

    public SharedArena(SharedSegments segments, Allocator allocator) {
        this.segments = segments;
        this.allocator = allocator;
    }

    /** The sizes of the blobs {@link #take} will be asked for, in order (for sizing the segments it takes). */
    public void expect(long[] sizes) {
        for (long s : sizes) {
            if (s < 0) {
                throw new IllegalArgumentException("a blob of " + s + " bytes");
            }
        }
        expected = sizes.clone();
        next = 0;
    }

    /**
     * A blob of {@code size} bytes in a segment (its bytes as the segment held them: a recycled
     * segment's old bytes, a new one's zeros; {@link #recycled} says which).
     *
     * @throws OutOfBudgetException when the budget, or the system's memory, has no room for a segment now
     * @throws IOException when no segment can be made
     */
    public Blob take(long size) throws IOException {
        if (size < 0) {
            throw new IllegalArgumentException("a blob of " + size + " bytes");
        }
        long start = current == null ? -1 : SharedSegment.align(at, size);
        if (current == null || start > current.capacity() - size) {
            SharedSegments.Acquired a = segments.acquire(size, Math.max(size, layoutFrom(next)));
            held.add(a.segment());
            current = a.segment();
            start = SharedSegment.HEADER;
            currentRecycled = a.recycled();
            if (a.recycled()) {
                recycledBytes += current.capacity();
            } else {
                freshBytes += current.capacity();
                freshSegments++;
            }
        }
        Blob b = current.blob(allocator, start, size);
        at = start + size;
        if (next < expected.length && expected[next] == size) {
            next++;
        }
        return b;
    }

    /** Whether the blob taken last lies in a recycled segment (not zeroed: its old bytes are there). */
    public boolean recycled() {
        return currentRecycled;
    }

    /** Data bytes the expected blobs from {@code i} on take when placed from a segment's start. */
    private long layoutFrom(int i) {
        return layout(expected, i);
    }

    /** Data bytes blobs of {@code sizes} (from index {@code from} on) take when placed from a segment's start. */
    public static long layout(long[] sizes, int from) {
        long end = SharedSegment.HEADER;
        for (int k = from; k < sizes.length; k++) {
            end = SharedSegment.align(end, sizes[k]) + sizes[k];
        }
        return end - SharedSegment.HEADER;
    }

    /** Bytes of the segments taken that were kept for reuse (their pages already touched). */
    public long recycledBytes() {
        return recycledBytes;
    }

    /** Bytes of the segments made new for this arena (pages the first write touches). */
    public long freshBytes() {
        return freshBytes;
    }

    /** How many segments were made new for this arena. */
    public int freshSegments() {
        return freshSegments;
    }

    /** Gives back the arena's references: each segment goes with the last of its blobs. */
    @Override
    public void close() {
        held.forEach(SharedSegment::release);
        held.clear();
        current = null;
    }
}
