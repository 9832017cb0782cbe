package io.tenplex.store.memory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Allocates {@link Blob}s within a fixed budget and accounts for every byte exactly: the bytes of a
 * blob count from its allocation until its last reference is released. {@link #close()} throws when
 * bytes are still outstanding, so tests fail on leaks.
 *
 * <p>The memory itself comes from a {@link BlobBacking}: by default {@link OffHeapBacking}, direct
 * buffers of at most {@link #chunkSize()} bytes freed eagerly rather than at the next GC.
 *
 * <p>A backing may keep freed memory for reuse, and so may {@link Keeper}s outside it (free
 * shared-memory segments); that memory ({@link #pooledBytes()}) is not counted as used, and never
 * holds budget a new allocation needs: used plus pooled bytes stay within the budget, the kept
 * memory given back first. A request that fits the budget is never refused because of it.
 */
public final class Allocator implements AutoCloseable {
    /** Largest chunk: the largest power of two a {@link java.nio.ByteBuffer} can hold. */
    public static final int MAX_CHUNK = 1 << 30;

    private final long budget;
    private final BlobBacking backing;
    private final int chunkSize;
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong blobs = new AtomicLong();
    private final List<Keeper> keepers = new CopyOnWriteArrayList<>();
    private final BlobTrace trace = new BlobTrace();

    /** A holder of freed memory kept for reuse outside blobs, not counted as used (e.g. free shared-memory segments). */
    public interface Keeper {
        /** Bytes kept now. */
        long keptBytes();

        /** Frees at least {@code bytes} of kept memory (all of it if there is less); the bytes freed. */
        long giveBack(long bytes);
    }

    public Allocator(long budget) {
        this(budget, MAX_CHUNK);
    }

    /** Freed chunks may keep 1/POOL_SHARE of the budget for reuse: a re-saved checkpoint reuses its old memory. */
    private static final int POOL_SHARE = 2;

    /** With a smaller chunk size, so that tests can exercise multi-chunk blobs cheaply. */
    public Allocator(long budget, int chunkSize) {
        this(budget, offHeap(budget, chunkSize));
    }

    /** Blobs whose memory comes from {@code backing}, within {@code budget} bytes. */
    public Allocator(long budget, BlobBacking backing) {
        if (budget < 0 || backing.chunkSize() < 1 || backing.chunkSize() > MAX_CHUNK) {
            throw new IllegalArgumentException("budget " + budget + " / chunk size " + backing.chunkSize()
                    + " out of range");
        }
        this.budget = budget;
        this.backing = backing;
        this.chunkSize = backing.chunkSize();
    }

    private static BlobBacking offHeap(long budget, int chunkSize) {
        if (budget < 0 || chunkSize < 1 || chunkSize > MAX_CHUNK) {
            throw new IllegalArgumentException("budget " + budget + " / chunk size " + chunkSize + " out of range");
        }
        return new OffHeapBacking(chunkSize, budget / POOL_SHARE);
    }

    /**
     * Allocates a zero-filled blob of {@code size} bytes with one reference, owned by the caller.
     *
     * @throws OutOfBudgetException when the budget (or the backing) cannot take {@code size} more bytes
     */
    public Blob allocate(long size) {
        return allocate(size, true);
    }

    /**
     * Allocates a blob of {@code size} bytes whose content is unspecified (possibly the old bytes of a
     * freed blob): for a writer that overwrites every byte before the blob is published, such as an
     * upload of known length. Otherwise as {@link #allocate}.
     */
    public Blob allocateForOverwrite(long size) {
        return allocate(size, false);
    }

    private Blob allocate(long size, boolean zeroed) {
        reserve(size);
        BlobBacking.Memory memory;
        try {
            trimPool();
            memory = zeroed ? backing.allocate(size) : backing.allocateForOverwrite(size);
        } catch (RuntimeException | Error e) {
            used.addAndGet(-size); // nothing of a failed allocation stays reserved
            throw e;
        }
        blobs.incrementAndGet();
        trace.allocated(memory);
        return new Blob(this, memory, size, chunkSize, true);
    }

    /**
     * A blob over memory that its provider accounts for (e.g. a {@link SharedSegment}, reserved with
     * {@link #reserveExternal}): it counts as a live blob, its bytes are not counted again.
     */
    public Blob wrap(BlobBacking.Memory memory, long size) {
        blobs.incrementAndGet();
        trace.allocated(memory);
        return new Blob(this, memory, size, chunkSize, false);
    }

    /**
     * Counts {@code size} bytes of memory held outside blobs against the budget, giving kept memory
     * back as needed.
     *
     * @throws OutOfBudgetException when the budget cannot take them
     */
    public void reserveExternal(long size) {
        reserve(size);
        trimPool();
    }

    /** Kept memory never holds budget that is in use: used plus pooled bytes stay within the budget. */
    private void trimPool() {
        long over = used.get() + pooledBytes() - budget;
        if (over > 0) {
            over -= backing.releasePooled(over);
        }
        for (Keeper k : keepers) {
            if (over <= 0) {
                break;
            }
            over -= k.giveBack(over);
        }
    }

    /** Gives back bytes counted by {@link #reserveExternal}. */
    public void releaseExternal(long size) {
        used.addAndGet(-size);
    }

    /** Adds a holder of kept memory, counted in {@link #pooledBytes()} and given back as the budget needs. */
    public void addKeeper(Keeper keeper) {
        keepers.add(keeper);
    }

    private void reserve(long size) {
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
        if (!tryReserve(size)) {
            long u = used.get();
            throw new OutOfBudgetException("storing " + size + " bytes would exceed the memory budget ("
                    + u + " of " + budget + " bytes in use, " + pooledBytes() + " more kept for reuse and given "
                    + "back first)", size <= budget);
        }
    }

    private boolean tryReserve(long size) {
        while (true) {
            long u = used.get();
            if (size > budget - u) {
                return false;
            }
            if (used.compareAndSet(u, u + size)) {
                return true;
            }
        }
    }

    void release(BlobBacking.Memory memory, long size) {
        trace.released(memory);
        memory.free();
        used.addAndGet(-size);
        blobs.decrementAndGet();
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

    /**
     * Bytes of freed memory kept for reuse (the backing's pooled chunks and every {@link Keeper}'s);
     * not counted in {@link #usedBytes()}.
     */
    public long pooledBytes() {
        long n = backing.pooledBytes();
        for (Keeper k : keepers) {
            n += k.keptBytes();
        }
        return n;
    }

    /** Bytes that can still be allocated. */
    public long freeBytes() {
        return budget - used.get();
    }

    /** @throws IllegalStateException when memory is outstanding */
    @Override
    public void close() {
        backing.releasePooled(Long.MAX_VALUE);
        long u = used.get();
        if (u != 0) {
            throw new IllegalStateException(u + " bytes in " + blobs.get() + " blobs still allocated at close"
                    + trace.sites());
        }
    }
}
