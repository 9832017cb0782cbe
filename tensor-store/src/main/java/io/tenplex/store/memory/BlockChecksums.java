package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.zip.CRC32C;

/**
 * CRC32C of a blob's bytes per fixed-size block (the last block may be shorter). The checksum of any
 * block-aligned byte range is derived from these without reading the bytes again, so a read of whole
 * blocks can carry a checksum that the receiver verifies.
 */
public final class BlockChecksums {
    /** Default block size: 1 MiB. */
    public static final int DEFAULT_BLOCK = 1 << 20;

    private final int blockSize;
    private final long size;
    private final int[] crcs;

    BlockChecksums(int blockSize, long size, int[] crcs) {
        this.blockSize = blockSize;
        this.size = size;
        this.crcs = crcs;
    }

    static int blocks(long size, int blockSize) {
        return (int) ((size + blockSize - 1) / blockSize);
    }

    /** Computes the checksums of every block of {@code blob}. */
    public static BlockChecksums compute(Blob blob, int blockSize) {
        int n = blocks(blob.size(), blockSize);
        int[] crcs = new int[n];
        CRC32C c = new CRC32C();
        for (int i = 0; i < n; i++) {
            long off = (long) i * blockSize;
            long len = Math.min(blockSize, blob.size() - off);
            c.reset();
            for (ByteBuffer v : blob.views(off, len)) {
                c.update(v);
            }
            crcs[i] = (int) c.getValue();
        }
        return new BlockChecksums(blockSize, blob.size(), crcs);
    }

    /** Checksums computed incrementally while bytes arrive in order (an upload). */
    public static final class Builder {
        private final int blockSize;
        private final long size;
        private final int[] crcs;
        private final CRC32C current = new CRC32C();
        private long fed;

        public Builder(long size, int blockSize) {
            this.blockSize = blockSize;
            this.size = size;
            this.crcs = new int[blocks(size, blockSize)];
        }

        /** Feeds the next bytes (the buffer's remaining bytes; its position does not move). */
        public void update(ByteBuffer data) {
            ByteBuffer d = data.duplicate();
            while (d.hasRemaining()) {
                int inBlock = (int) (fed % blockSize);
                int n = Math.min(d.remaining(), blockSize - inBlock);
                ByteBuffer part = d.slice(d.position(), n);
                current.update(part);
                d.position(d.position() + n);
                fed += n;
                if (fed % blockSize == 0 || fed == size) {
                    crcs[(int) ((fed - 1) / blockSize)] = (int) current.getValue();
                    current.reset();
                }
            }
        }

        public BlockChecksums build() {
            if (fed != size) {
                throw new IllegalStateException("fed " + fed + " of " + size + " bytes");
            }
            return new BlockChecksums(blockSize, size, crcs);
        }
    }

    public int blockSize() {
        return blockSize;
    }

    public int blockCount() {
        return crcs.length;
    }

    public int block(int i) {
        return crcs[i];
    }

    /**
     * The checksum of bytes {@code [offset, offset+length)} when the range starts on a block boundary
     * and ends on one (or at the end of the data); empty otherwise.
     */
    public OptionalInt range(long offset, long length) {
        long end = offset + length;
        if (offset % blockSize != 0 || (end % blockSize != 0 && end != size) || end > size) {
            return OptionalInt.empty();
        }
        int first = (int) (offset / blockSize);
        int last = blocks(end, blockSize) - 1;
        if (last < first) {
            return OptionalInt.of(0);
        }
        int crc = crcs[first];
        int[] fullBlock = last > first ? Crc32c.zeros(blockSize) : null;
        for (int b = first + 1; b <= last; b++) {
            long len = Math.min(blockSize, size - (long) b * blockSize);
            int[] op = len == blockSize ? fullBlock : Crc32c.zeros(len);
            crc = Crc32c.apply(op, crc) ^ crcs[b];
        }
        return OptionalInt.of(crc);
    }
}
