package io.tenplex.store.memory;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;

/**
 * Blob memory in direct buffers of at most {@link #chunkSize()} bytes, freed eagerly through the
 * buffer's cleaner rather than at the next GC. Chunks of 1 MiB and more start on a page boundary.
 */
public final class OffHeapBacking implements BlobBacking {
    private static final sun.misc.Unsafe UNSAFE = unsafe();
    private static final int PAGE = 4096;
    private static final int ALIGN_FROM = 1 << 20;

    private final int chunkSize;

    public OffHeapBacking(int chunkSize) {
        if (chunkSize < 1 || chunkSize > Allocator.MAX_CHUNK) {
            throw new IllegalArgumentException("chunk size " + chunkSize + " out of range");
        }
        this.chunkSize = chunkSize;
    }

    @Override
    public int chunkSize() {
        return chunkSize;
    }

    @Override
    public Memory allocate(long size) {
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

    /** The chunks handed out and the allocated buffers they are (aligned) slices of. */
    private record Chunks(ByteBuffer[] chunks, ByteBuffer[] owners) implements Memory {
        @Override
        public void free() {
            freeAll(owners, owners.length);
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
        if (UNSAFE == null) {
            return; // memory is then returned by the GC instead of eagerly
        }
        for (int i = 0; i < count; i++) {
            UNSAFE.invokeCleaner(owners[i]);
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
