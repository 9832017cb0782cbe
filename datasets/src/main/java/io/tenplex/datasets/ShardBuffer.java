package io.tenplex.datasets;

import io.tenplex.store.StoreException;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Blob;
import java.nio.ByteBuffer;

/**
 * The bytes of one shard file of a rank view: a blob of the file's exact size, filled sample by
 * sample by the loader, in any order. A read waits until every sample it touches is filled; it is
 * woken with an error when the mount is closed or when the loader gives up a sample it touches
 * ({@link #fail}). Thread-safe.
 */
final class ShardBuffer {
    final int[] ids;
    final long[] offsets; // offsets[i] = start of sample i; offsets[ids.length] = size
    private final Blob blob; // null when the file is empty
    private final boolean[] filled;
    private final boolean[] claimed; // taken by a loader thread, which fills it (or gives up)
    private volatile int contiguous; // samples [0, contiguous) are filled
    private boolean closed;
    private String[] failed; // why a sample was given up; null until one is
    private int active; // reads and copies in progress; the blob is freed when the last one ends after close

    /** @param lengths byte length of every sample; the blob comes from {@code allocator} (it may throw over budget) */
    ShardBuffer(int[] ids, long[] lengths, Allocator allocator) {
        this.ids = ids;
        this.offsets = new long[ids.length + 1];
        for (int i = 0; i < ids.length; i++) {
            offsets[i + 1] = offsets[i] + lengths[i];
        }
        this.filled = new boolean[ids.length];
        this.claimed = new boolean[ids.length];
        this.blob = offsets[ids.length] == 0 ? null : allocator.allocate(offsets[ids.length]);
    }

    long size() {
        return offsets[ids.length];
    }

    long length(int i) {
        return offsets[i + 1] - offsets[i];
    }

    /** Stores sample {@code i} (exactly its length) and wakes the readers waiting for it; a no-op once closed. */
    void fill(int i, ByteBuffer bytes) {
        if (bytes.remaining() != length(i)) {
            throw new IllegalArgumentException("sample " + ids[i] + " has " + bytes.remaining() + " bytes, expected "
                    + length(i));
        }
        synchronized (this) {
            if (closed) {
                return; // the mount was replaced or removed while this sample was loading
            }
            active++;
        }
        try {
            if (blob != null && bytes.hasRemaining()) {
                blob.write(offsets[i], bytes);
            }
        } finally {
            exit();
        }
        synchronized (this) {
            filled[i] = true;
            int c = contiguous;
            while (c < filled.length && filled[c]) {
                c++;
            }
            contiguous = c;
            notifyAll(); // a reader may wait for this sample only, ahead of the contiguous prefix
        }
    }

    /** Gives sample {@code i} (claimed, not filled) up: readers waiting for it, or coming later, fail with {@code why}. */
    synchronized void fail(int i, String why) {
        if (failed == null) {
            failed = new String[ids.length];
        }
        failed[i] = why;
        notifyAll();
    }

    /**
     * Takes sample {@code i} for loading: true for the first caller only, so that a sample the
     * loader reaches in two ways (its turn in read order, a decoded block of the source that holds
     * it) is loaded once.
     */
    synchronized boolean claim(int i) {
        if (claimed[i]) {
            return false;
        }
        claimed[i] = true;
        return true;
    }

    synchronized boolean isFilled(int i) {
        return filled[i];
    }

    boolean complete() {
        return contiguous == ids.length;
    }

    /** Copies sample {@code i} into {@code dst} if it is filled; false if not (or closed). */
    boolean copySample(int i, ByteBuffer dst) {
        synchronized (this) {
            if (closed || !filled[i]) {
                return false;
            }
            active++;
        }
        try {
            if (length(i) > 0) {
                blob.copyTo(offsets[i], length(i), dst);
            }
            return true;
        } finally {
            exit();
        }
    }

    private void exit() {
        boolean free;
        synchronized (this) {
            free = --active == 0 && closed;
        }
        if (free && blob != null) {
            blob.release();
        }
    }

    /**
     * Reads up to {@code dst.remaining()} bytes at {@code offset}, waiting until they are loaded.
     *
     * @return nanoseconds spent waiting
     * @throws StoreException {@code BAD_GATEWAY} if the loader gave up a sample in the range (its source cannot produce it)
     */
    long read(long offset, ByteBuffer dst) throws InterruptedException {
        long n = Math.min(dst.remaining(), size() - offset);
        if (n <= 0) {
            return 0;
        }
        long waited = 0;
        int first = sampleAt(offset);
        int last = sampleAt(offset + n - 1);
        synchronized (this) {
            if (contiguous <= last && !allFilled(first, last)) {
                long t0 = System.nanoTime();
                while (!closed && !allFilled(first, last)) {
                    failIfGivenUp(first, last);
                    wait();
                }
                waited = System.nanoTime() - t0;
            }
            if (closed) {
                throw new IllegalStateException("dataset mount closed");
            }
            active++;
        }
        try {
            ByteBuffer slice = dst.slice(dst.position(), (int) n);
            blob.copyTo(offset, n, slice);
            dst.position(dst.position() + (int) n);
        } finally {
            exit();
        }
        return waited;
    }

    /** Throws (502) if a sample of {@code [from, to]} was given up; holding the lock. */
    private void failIfGivenUp(int from, int to) {
        for (int i = from; failed != null && i <= to; i++) {
            if (failed[i] != null) {
                throw new StoreException(StoreException.Kind.BAD_GATEWAY, failed[i]);
            }
        }
    }

    private boolean allFilled(int from, int to) { // holding the lock
        for (int i = Math.max(from, contiguous); i <= to; i++) {
            if (!filled[i]) {
                return false;
            }
        }
        return true;
    }

    /** The sample holding byte {@code pos} (samples of length 0 are skipped). */
    int sampleAt(long pos) {
        int lo = 0;
        int hi = ids.length - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (offsets[mid] <= pos) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    /** Wakes waiting readers with an error and frees the bytes. */
    void close() {
        boolean free;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            notifyAll();
            free = active == 0;
        }
        if (free && blob != null) {
            blob.release();
        }
    }
}
