package io.tenplex.store.memory;

import java.nio.ByteBuffer;

/**
 * Where the bytes of blobs live: off-heap chunks today ({@link OffHeapBacking}); a memory-mapped
 * file or a shared-memory segment can be another implementation, given to the {@link Allocator}
 * without touching the namespace above it.
 *
 * <p>A backing only provides and frees memory. The {@link Allocator} keeps the budget and the
 * accounting, and a {@link Blob} does the chunk arithmetic, so every backing presents a blob as
 * chunks of {@link #chunkSize()} bytes (the last one possibly shorter).
 */
public interface BlobBacking {

    /** Bytes in every chunk of a blob but the last, at most {@link Allocator#MAX_CHUNK}. */
    int chunkSize();

    /**
     * Zero-filled memory for {@code size >= 0} bytes, owned by the caller until {@link Memory#free()}.
     *
     * @throws OutOfBudgetException when the backing cannot provide the memory; nothing stays allocated
     */
    Memory allocate(long size);

    /**
     * Memory for {@code size} bytes that the caller overwrites entirely before anyone reads it (an
     * upload of known length): its content is unspecified, so a backing may skip zeroing it. By
     * default, {@link #allocate}.
     */
    default Memory allocateForOverwrite(long size) {
        return allocate(size);
    }

    /** Bytes of freed memory the backing keeps for reuse (not part of any blob); 0 by default. */
    default long pooledBytes() {
        return 0;
    }

    /**
     * Gives at least {@code bytes} of kept memory back to the system (all of it if there is less);
     * returns how much was given back.
     */
    default long releasePooled(long bytes) {
        return 0;
    }

    /** The memory of one blob. */
    interface Memory {

        /**
         * The blob's bytes in order: {@code ceil(size / chunkSize)} buffers, each of capacity
         * {@link BlobBacking#chunkSize()} except the last. Borrowed: valid until {@link #free()}.
         */
        ByteBuffer[] chunks();

        /** Returns the memory to the backing; called exactly once, after the last reader is done. */
        void free();
    }
}
