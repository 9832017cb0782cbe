package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Collects a body of unknown length (chunked transfer encoding) in budgeted segments that grow
 * geometrically, then copies it into one exactly-sized blob. Close it to free the segments.
 */
public final class GrowingBuffer implements AutoCloseable {
    private static final int FIRST = 64 * 1024;
    private static final int LARGEST = 64 << 20;

    private final Allocator allocator;
    private final List<Blob> segments = new ArrayList<>();
    private long segmentUsed;
    private long size;

    public GrowingBuffer(Allocator allocator) {
        this.allocator = allocator;
    }

    /** Appends the remaining bytes of {@code data} (consumed); may throw {@link OutOfBudgetException}. */
    public void append(ByteBuffer data) {
        while (data.hasRemaining()) {
            Blob last = segments.isEmpty() ? null : segments.get(segments.size() - 1);
            if (last == null || segmentUsed == last.size()) {
                long next = last == null ? FIRST : Math.min(LARGEST, last.size() * 2);
                segments.add(allocator.allocateForOverwrite(next)); // only written bytes are read
                segmentUsed = 0;
                continue;
            }
            int n = (int) Math.min(data.remaining(), last.size() - segmentUsed);
            ByteBuffer part = data.slice(data.position(), n);
            last.write(segmentUsed, part);
            data.position(data.position() + n);
            segmentUsed += n;
            size += n;
        }
    }

    public long size() {
        return size;
    }

    /** Copies the collected bytes into a new writer of exactly {@link #size()} bytes. */
    public BlobWriter toWriter(int checksumBlock) {
        BlobWriter w = BlobWriter.allocate(allocator, size, checksumBlock);
        try {
            long left = size;
            for (Blob s : segments) {
                long n = Math.min(left, s.size());
                for (ByteBuffer v : s.views(0, n)) {
                    w.append(v);
                }
                left -= n;
            }
            return w;
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    /** Copies the collected bytes into a heap array (for small bodies such as headers). */
    public byte[] toArray() {
        byte[] out = new byte[Math.toIntExact(size)];
        ByteBuffer dst = ByteBuffer.wrap(out);
        long left = size;
        for (Blob s : segments) {
            long n = Math.min(left, s.size());
            s.copyTo(0, n, dst);
            left -= n;
        }
        return out;
    }

    @Override
    public void close() {
        segments.forEach(Blob::release);
        segments.clear();
        size = 0;
    }
}
