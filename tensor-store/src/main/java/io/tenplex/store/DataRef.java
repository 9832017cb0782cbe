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

    /**
     * Checks the bytes of every checksum block that {@code [offset, offset+length)} touches against the
     * CRC32C stored when they were committed, when they lie in a shared-memory segment: a process of
     * the daemon's user can write into a segment it was handed after the commit, and such bytes must not
     * be moved or served as the tensor's. Other memory is the daemon's own (nothing to check).
     *
     * @throws StoreException ({@code CONFLICT}) when a block's bytes changed
     */
    public void verifyShared(long offset, long length) {
        if (blob == null || sums == null || length <= 0 || blob.sharedLocation().isEmpty()) {
            return;
        }
        int bs = sums.blockSize();
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        for (long b = offset / bs; b <= (offset + length - 1) / bs; b++) {
            long off = b * bs;
            long len = Math.min(bs, blob.size() - off);
            crc.reset();
            for (ByteBuffer v : blob.views(off, len)) {
                crc.update(v);
            }
            if ((int) crc.getValue() != sums.block((int) b)) {
                throw changedSinceCommit(off, len);
            }
        }
    }

    private StoreException changedSinceCommit(long off, long len) {
        return new StoreException(StoreException.Kind.CONFLICT, path + ": bytes " + off + ".." + (off + len)
                + " changed in its shared-memory segment after they were committed (their CRC32C no longer matches): "
                + "not used; save the step again");
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
