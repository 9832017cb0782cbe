package io.tenplex.store.memory;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;

/**
 * Blob memory in direct buffers of at most {@link #chunkSize()} bytes, freed eagerly through the
 * buffer's cleaner rather than at the next GC, or kept in a bounded {@link ChunkPool} for the next
 * blob that needs a chunk of the same capacity. Chunks of 1 MiB and more start on a page boundary.
 *
 * <p>Fresh chunks come from {@link ByteBuffer#allocateDirect}, which zeroes them; that costs little
 * next to the page faults of fresh memory, which every JDK-only alternative pays too (see
 * docs/DECISIONS.md). Recycled chunks are zeroed only for {@link #allocate}, not for
 * {@link #allocateForOverwrite}.
 *
 * <p>Chunks of {@link HugePages#SIZE} and more are advised for transparent huge pages when made
 * (nothing else changes: the advice costs one system call, and the kernel collapses the zeroed
 * pages into 2 MiB pages in the background), so long-lived and recycled chunks, which uploads land
 * in, end up in huge pages (docs/DECISIONS.md, Memory).
 */
public final class OffHeapBacking implements BlobBacking {
    private static final sun.misc.Unsafe UNSAFE = unsafe();
    private static final int PAGE = 4096;
    private static final int ALIGN_FROM = 1 << 20;

    private final int chunkSize;
    private final ChunkPool pool;

    /** Without a pool: freed chunks go back to the system at once. */
    public OffHeapBacking(int chunkSize) {
        this(chunkSize, 0);
    }

    /** Keeping up to {@code poolLimit} bytes of freed chunks for reuse. */
    public OffHeapBacking(int chunkSize, long poolLimit) {
        if (chunkSize < 1 || chunkSize > Allocator.MAX_CHUNK) {
            throw new IllegalArgumentException("chunk size " + chunkSize + " out of range");
        }
        this.chunkSize = chunkSize;
        this.pool = new ChunkPool(poolLimit);
        if (chunkSize >= HugePages.SIZE) {
            HugePages.available(); // binds the C library now, not during the first large upload
        }
    }

    @Override
    public int chunkSize() {
        return chunkSize;
    }

    @Override
    public Memory allocate(long size) {
        return allocate(size, true);
    }

    @Override
    public Memory allocateForOverwrite(long size) {
        return allocate(size, false);
    }

    @Override
    public long pooledBytes() {
        return pool.bytes();
    }

    @Override
    public long releasePooled(long bytes) {
        long n = 0;
        for (ByteBuffer b : pool.drain(bytes)) {
            n += b.capacity();
            free(b);
        }
        return n;
    }

    private Memory allocate(long size, boolean zeroed) {
        int n = (int) ((size + chunkSize - 1) / chunkSize);
        ByteBuffer[] chunks = new ByteBuffer[n];
        ByteBuffer[] owners = new ByteBuffer[n];
        int made = 0;
        try {
            for (; made < n; made++) {
                int len = (int) Math.min(chunkSize, size - (long) made * chunkSize);
                owners[made] = owner(ownerCapacity(len), zeroed);
                chunks[made] = chunkOf(owners[made], len);
            }
        } catch (OutOfMemoryError | RuntimeException e) {
            // nothing of a failed allocation stays allocated
            freeAll(owners, made);
            if (e instanceof OutOfMemoryError) {
                throw new OutOfBudgetException("out of direct memory allocating " + size + " bytes (raise "
                        + "-XX:MaxDirectMemorySize or lower the memory limit): " + e.getMessage(), true);
            }
            throw e;
        }
        return new Chunks(chunks, owners);
    }

    /** A recycled buffer (zeroed when asked) or a fresh one; empties the pool before giving up. */
    private ByteBuffer owner(int capacity, boolean zeroed) {
        ByteBuffer b = pool.take(capacity);
        if (b != null) {
            if (zeroed) {
                ChunkPool.zero(b);
            }
            return b;
        }
        ByteBuffer fresh;
        try {
            fresh = ByteBuffer.allocateDirect(capacity);
        } catch (OutOfMemoryError e) {
            if (releasePooled(Long.MAX_VALUE) == 0) {
                throw e;
            }
            fresh = ByteBuffer.allocateDirect(capacity);
        }
        if (capacity >= HugePages.SIZE) {
            HugePages.advise(fresh);
        }
        return fresh;
    }

    /** Keeps the buffer in the pool or frees it now. */
    private void recycle(ByteBuffer owner) {
        if (!pool.offer(owner)) {
            free(owner);
        }
    }

    /** The chunks handed out and the allocated buffers they are (aligned) slices of. */
    private final class Chunks implements Memory {
        private final ByteBuffer[] chunks;
        private final ByteBuffer[] owners;

        Chunks(ByteBuffer[] chunks, ByteBuffer[] owners) {
            this.chunks = chunks;
            this.owners = owners;
        }

        @Override
        public ByteBuffer[] chunks() {
            return chunks;
        }

        @Override
        public void free() {
            for (ByteBuffer o : owners) {
                recycle(o);
            }
        }
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

    private static void freeAll(ByteBuffer[] owners, int count) {
        for (int i = 0; i < count; i++) {
            free(owners[i]);
        }
    }

    /** Frees a direct buffer, or unmaps a mapped one, now rather than at some later GC. */
    static void free(ByteBuffer owner) {
        if (UNSAFE != null) { // else the memory is returned by the GC instead of eagerly
            UNSAFE.invokeCleaner(owner);
        }
    }

    private static sun.misc.Unsafe unsafe() {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            return (sun.misc.Unsafe) f.get(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
