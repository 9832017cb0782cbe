package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/**
 * A reader's reference to the bytes of a file, tensor or sidecar as they were when opened: a replace
 * or delete after opening does not change or free them. Close it (exactly once) to give the
 * reference back.
 */
public final class DataRef implements AutoCloseable {
    private final StorePath path;
    private final EntryType type;
    private final TensorMeta meta;
    private final Blob blob;
    private final BlockChecksums sums;
    private final ByteBuffer heap;
    private boolean closed;

    DataRef(StorePath path, EntryType type, TensorMeta meta, Blob retainedBlob, BlockChecksums sums) {
        this.path = path;
        this.type = type;
        this.meta = meta;
        this.blob = retainedBlob;
        this.sums = sums;
        this.heap = null;
    }

    DataRef(StorePath path, byte[] content) {
        this.path = path;
        this.type = EntryType.SIDECAR;
        this.meta = null;
        this.blob = null;
        this.sums = null;
        this.heap = ByteBuffer.wrap(content).asReadOnlyBuffer();
    }

    public StorePath path() {
        return path;
    }

    public EntryType type() {
        return type;
    }

    /** Tensor metadata; null for files and sidecars. */
    public TensorMeta meta() {
        return meta;
    }

    /** Where the bytes lie when a client on this host can map them (a shared-memory segment). */
    public java.util.Optional<io.tenplex.store.memory.SharedSegment.Location> sharedLocation() {
        return blob == null ? java.util.Optional.empty() : blob.sharedLocation();
    }

    public long size() {
        return blob != null ? blob.size() : heap.capacity();
    }

    /** Borrowed read-only views of {@code [offset, offset+length)}; valid until {@link #close()}. */
    public ByteBuffer[] views(long offset, long length) {
        if (blob != null) {
            return blob.views(offset, length);
        }
        return length == 0 ? new ByteBuffer[0] : new ByteBuffer[] {heap.slice((int) offset, (int) length)};
    }

    /** Copies bytes into {@code dst} at its position and advances it. */
    public void copyTo(long offset, long length, ByteBuffer dst) {
        if (blob != null) {
            blob.copyTo(offset, length, dst);
        } else {
            dst.put(heap.slice((int) offset, (int) length));
        }
    }

    /** All bytes as one borrowed buffer when they are in one piece of memory, else null. */
    ByteBuffer singleBuffer() {
        return blob != null ? blob.singleChunk() : heap;
    }

    /** A single view when the bytes lie in one chunk, else null. */
    ByteBuffer viewInChunk(long offset, int length) {
        return blob != null ? blob.viewInChunk(offset, length) : heap.slice((int) offset, length);
    }

    /** The stored CRC32C of a block-aligned byte range, empty when not aligned or not kept. */
    public OptionalInt crc32c(long offset, long length) {
        return sums == null ? OptionalInt.empty() : sums.range(offset, length);
    }

    /** Per-block checksums, or null for sidecars. */
    public BlockChecksums checksums() {
        return sums;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (blob != null) {
                blob.release();
            }
        }
    }
}
