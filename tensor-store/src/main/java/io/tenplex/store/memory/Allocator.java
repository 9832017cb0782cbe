package io.tenplex.store.memory;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Allocates off-heap {@link Blob}s within a fixed budget and accounts for every byte exactly: the
 * bytes of a blob count from its allocation until its last reference is released. {@link #close()}
 * throws when bytes are still outstanding, so tests fail on leaks.
 *
 * <p>Memory comes from direct buffers of at most {@link #chunkSize()} bytes, freed eagerly through the
 * buffer's cleaner rather than at the next GC.
 */
public final class Allocator implements AutoCloseable {
    /** Largest chunk: the largest power of two a {@link ByteBuffer} can hold. */
    public static final int MAX_CHUNK = 1 << 30;

    private static final sun.misc.Unsafe UNSAFE = unsafe();
    private static final int PAGE = 4096;
    private static final int ALIGN_FROM = 1 << 20;

    private final long budget;
    private final int chunkSize;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong blobs = new AtomicLong();

    public Allocator(long budget) {
        this(budget, MAX_CHUNK);
    }

    /** With a smaller chunk size, so that tests can exercise multi-chunk blobs cheaply. */
    public Allocator(long budget, int chunkSize) {
        if (budget < 0 || chunkSize < 1 || chunkSize > MAX_CHUNK) {
            throw new IllegalArgumentException("budget " + budget + " / chunk size " + chunkSize + " out of range");
        }
        this.budget = budget;
        this.chunkSize = chunkSize;
    }

    /**
     * Allocates a zero-filled blob of {@code size} bytes with one reference, owned by the caller.
     *
     * @throws OutOfBudgetException when the budget cannot take {@code size} more bytes
     */
    public Blob allocate(long size) {
        reserve(size);
        int n = (int) ((size + chunkSize - 1) / chunkSize);
        ByteBuffer[] chunks = new ByteBuffer[n];
        ByteBuffer[] owners = new ByteBuffer[n];
        int made = 0;
        try {
            for (; made < n; made++) {
                int len = (int) Math.min(chunkSize, size - (long) made * chunkSize);
                owners[made] = ByteBuffer.allocateDirect(ownerCapacity(len));
                chunks[made] = chunkOf(owners[made], len);
            }
        } catch (OutOfMemoryError | RuntimeException e) {
            // nothing of a failed allocation stays reserved or allocated
            for (int i = 0; i < made; i++) {
                free(owners[i]);
            }
            used.addAndGet(-size);
            if (e instanceof OutOfMemoryError) {
                throw new OutOfBudgetException("out of direct memory allocating " + size + " bytes (raise "
                        + "-XX:MaxDirectMemorySize or lower the memory limit): " + e.getMessage(), true);
            }
            throw e;
        }
        blobs.incrementAndGet();
        return new Blob(this, chunks, owners, size, chunkSize);
    }

    /**
     * Large chunks start on a page boundary, so a page-sized run of a strided read touches one page,
     * not two (direct buffers are only 16-byte aligned). {@link ByteBuffer#alignedSlice} rounds the
     * start up and the end down to the page, so the owner holds the length rounded up to whole pages
     * plus one page of slack for the start: any length fits, not only multiples of the page.
     */
    private static boolean aligned(int len) {
        return len >= ALIGN_FROM && len <= Integer.MAX_VALUE - 2 * PAGE;
    }

    static int ownerCapacity(int len) {
        return aligned(len) ? roundUpToPage(len) + PAGE - 1 : len;
    }

    static ByteBuffer chunkOf(ByteBuffer owner, int len) {
        return aligned(len) ? owner.alignedSlice(PAGE).limit(len).slice() : owner;
    }

    private static int roundUpToPage(int len) {
        return (len + PAGE - 1) & -PAGE;
    }

    private void reserve(long size) {
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
        while (true) {
            long u = used.get();
            if (size > budget - u) {
                throw new OutOfBudgetException("storing " + size + " bytes would exceed the memory budget ("
                        + u + " of " + budget + " bytes in use)", size <= budget);
            }
            if (used.compareAndSet(u, u + size)) {
                return;
            }
        }
    }

    void release(ByteBuffer[] owners, long size) {
        for (ByteBuffer c : owners) {
            free(c);
        }
        used.addAndGet(-size);
        blobs.decrementAndGet();
    }

    private static void free(ByteBuffer b) {
        if (UNSAFE != null) {
            UNSAFE.invokeCleaner(b);
        }
    }

    /** Bytes currently allocated. */
    public long usedBytes() {
        return used.get();
    }

    /** Blobs currently allocated. */
    public long liveBlobs() {
        return blobs.get();
    }

    public long budget() {
        return budget;
    }

    public int chunkSize() {
        return chunkSize;
    }

    /** Bytes that can still be allocated. */
    public long freeBytes() {
        return budget - used.get();
    }

    /** @throws IllegalStateException when memory is outstanding */
    @Override
    public void close() {
        long u = used.get();
        if (u != 0) {
            throw new IllegalStateException(u + " bytes in " + blobs.get() + " blobs still allocated at close");
        }
    }

    private static sun.misc.Unsafe unsafe() {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            return (sun.misc.Unsafe) f.get(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null; // memory is then returned by the GC instead of eagerly
        }
    }
}
