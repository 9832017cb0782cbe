package io.tenplex.datasets.hdf5;

import io.jhdf.Constants;
import io.jhdf.HdfFile;
import io.jhdf.api.Dataset;
import io.jhdf.api.Node;
import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.api.dataset.ContiguousDataset;
import io.jhdf.dataset.DatasetBase;
import io.jhdf.object.datatype.BitField;
import io.jhdf.object.datatype.DataType;
import io.jhdf.object.datatype.FixedPoint;
import io.jhdf.object.datatype.FloatingPoint;
import io.jhdf.object.message.DataLayout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * One opened array source: its rows (first dimension), the bytes of a row, and reads of any byte
 * range of the array in C order, as stored. A contiguous array is read straight from the file; a
 * chunked (or compact) one is decoded a block of rows at a time (a block is one chunk's extent
 * along the first dimension, within {@link #MAX_BLOCK_BYTES}), through the shared {@link BlockCache}.
 * Every size taken from the file that sizes memory (a row, a chunk, a block) is checked against a
 * limit before anything is allocated. Thread-safe once opened.
 */
final class Hdf5Array {
    /** The largest block of rows decoded at once, and the largest chunk decoded. */
    static final long MAX_BLOCK_BYTES = 16L << 20;

    final ArrayUrl url;
    private final DatasetBase dataset;
    private final FileChannel channel;
    private final BlockCache cache;
    private final long[] dims;
    private final long rows;
    private final long rowBytes;
    private final long fileOffset; // contiguous: where the array's bytes start in the file; else -1
    private final int blockRows;
    private final MissingChunks missing; // null: none to fill, or a zero fill value
    private final long chunkBytes; // a chunk's declared size: what its filters may decode it to (ChunkLimit)
    /** Set once its file changed on disk and the array was dropped: its blocks are no longer cached. */
    volatile boolean dropped;

    private Hdf5Array(ArrayUrl url, DatasetBase dataset, FileChannel channel, BlockCache cache, long fileOffset,
            int blockRows) {
        this.url = url;
        this.dataset = dataset;
        this.channel = channel;
        this.cache = cache;
        this.dims = dataset.getDimensionsAsLong();
        this.rows = dims[0];
        this.rowBytes = rowBytes(url, dataset);
        this.fileOffset = fileOffset;
        this.blockRows = blockRows;
        this.missing = dataset instanceof ChunkedDataset c ? MissingChunks.of(c) : null;
        this.chunkBytes = dataset instanceof ChunkedDataset c ? chunkBytes(c) : MAX_BLOCK_BYTES;
    }

    /**
     * Opens the dataset {@code url} names in {@code file} and checks that its rows can be served.
     *
     * @throws IllegalArgumentException if it is missing, not a dataset of fixed-size numbers, has
     *     no rows, is larger than the limits, lies beyond the end of the file, or its chunks cannot
     *     be decoded (an unsupported filter)
     */
    static Hdf5Array open(ArrayUrl url, HdfFile file, long fileSize, BlockCache cache) {
        DatasetBase ds = dataset(url, file);
        long[] dims = ds.getDimensionsAsLong();
        if (dims.length == 0 || ds.isScalar()) {
            throw new IllegalArgumentException(url.what() + " is a scalar, not rows");
        }
        RowLimits.checkRows(url.what(), dims[0]);
        long row = rowBytes(url, ds);
        long total = Math.multiplyExact(row, dims[0]);
        DataLayout layout = ds.getDataLayout();
        if (layout == DataLayout.CONTIGUOUS) {
            long offset = contiguousOffset(url, file, (ContiguousDataset) ds, total, fileSize);
            return new Hdf5Array(url, ds, file.getHdfBackingStorage().getFileChannel(), cache, offset, 0);
        }
        int block = layout == DataLayout.CHUNKED ? chunkRows(url, (ChunkedDataset) ds) : (int) dims[0];
        block = (int) Math.max(1, Math.min(block, row == 0 ? block : MAX_BLOCK_BYTES / row));
        Hdf5Array a = new Hdf5Array(url, ds, null, cache, -1, block);
        if (total > 0) {
            try {
                cache.get(a, 0); // a filter that cannot be decoded fails the mount, not the loader
            } catch (IOException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }
        return a;
    }

    private static DatasetBase dataset(ArrayUrl url, HdfFile file) {
        Node n = Hdf5Paths.find(url, file); // no external links, no soft-link loops
        if (!(n instanceof DatasetBase ds)) {
            throw new IllegalArgumentException(url.what() + " is a " + n.getType().name().toLowerCase(
                    java.util.Locale.ROOT) + ", not a dataset");
        }
        if (n.getHdfFile() != file) { // what the lookup above never gives: bytes of one file read as another's
            throw new IllegalArgumentException(url.what() + " lies in another file (" + n.getFileAsPath() + ")");
        }
        DataType t = ds.getDataType();
        if (ds.isVariableLength() || !(t instanceof FixedPoint || t instanceof FloatingPoint || t instanceof BitField)) {
            throw new IllegalArgumentException(url.what() + " holds " + t.getClass().getSimpleName()
                    + " elements; only fixed-size integers and floating point numbers are served");
        }
        return ds;
    }

    private static long rowBytes(ArrayUrl url, Dataset ds) {
        long[] dims = ds.getDimensionsAsLong();
        long row = ds.getDataType().getSize();
        try {
            for (int i = 1; i < dims.length; i++) {
                row = Math.multiplyExact(row, dims[i]);
            }
        } catch (ArithmeticException e) {
            row = Long.MAX_VALUE;
        }
        RowLimits.checkRowBytes(url.what(), row);
        return row;
    }

    private static long contiguousOffset(ArrayUrl url, HdfFile file, ContiguousDataset ds, long total, long fileSize) {
        long address = ds.getDataAddress();
        if (total > 0 && address == Constants.UNDEFINED_ADDRESS) {
            throw new IllegalArgumentException(url.what() + " has no data written");
        }
        long offset = file.getUserBlockSize() + address;
        if (total > 0 && (address < 0 || offset > fileSize - total)) {
            throw new IllegalArgumentException(url.what() + " ends beyond the end of the file (truncated?)");
        }
        return offset;
    }

    private static int chunkRows(ArrayUrl url, ChunkedDataset ds) {
        if (chunkBytes(ds) > MAX_BLOCK_BYTES) {
            throw new IllegalArgumentException(url.what() + " has chunks of more than " + MAX_BLOCK_BYTES
                    + " bytes (limit)");
        }
        return ds.getChunkDimensions()[0];
    }

    /** The bytes of one chunk as {@code ds} declares it, or more than {@link #MAX_BLOCK_BYTES}. */
    private static long chunkBytes(ChunkedDataset ds) {
        long bytes = ds.getDataType().getSize();
        for (int c : ds.getChunkDimensions()) {
            bytes = c <= 0 ? Long.MAX_VALUE : bytes * c; // at most 2^24 * 2^31 before the check below
            if (bytes > MAX_BLOCK_BYTES) {
                return Long.MAX_VALUE;
            }
        }
        return bytes;
    }

    long rows() {
        return rows;
    }

    long rowBytes() {
        return rowBytes;
    }

    long bytes() {
        return rows * rowBytes;
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the array's bytes from {@code begin}. */
    void read(long begin, ByteBuffer dst) throws IOException {
        if (begin < 0 || begin > bytes() - dst.remaining()) {
            throw new IOException(url + ": bytes " + begin + "+" + dst.remaining() + " beyond its " + bytes());
        }
        if (fileOffset >= 0) {
            readFile(fileOffset + begin, dst);
            return;
        }
        long blockBytes = blockRows * rowBytes;
        for (long pos = begin; dst.hasRemaining(); ) {
            long block = pos / blockBytes;
            byte[] b = cache.get(this, block);
            int off = (int) (pos - block * blockBytes);
            int n = Math.min(dst.remaining(), b.length - off);
            dst.put(b, off, n);
            pos += n;
        }
    }

    /**
     * The decoded block holding byte {@code at} of the array, or null for a contiguous array (read
     * straight from the file, with nothing to decode).
     */
    ArrayBlock blockAt(long at) throws IOException {
        if (fileOffset >= 0) {
            return null;
        }
        if (at < 0 || at >= bytes()) {
            throw new IOException(url + ": byte " + at + " beyond its " + bytes());
        }
        long blockBytes = blockRows * rowBytes;
        long block = at / blockBytes;
        return new ArrayBlock(block * blockBytes, ByteBuffer.wrap(cache.get(this, block)).asReadOnlyBuffer());
    }

    private void readFile(long pos, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int n = channel.read(dst, pos);
            if (n < 0) {
                throw new IOException(url + " ends before byte " + pos);
            }
            pos += n;
        }
    }

    /** The bytes of block {@code block} (its rows in C order), decoded from the file. */
    byte[] decode(long block) throws IOException {
        long first = block * blockRows;
        int n = (int) Math.min(blockRows, rows - first);
        long[] offset = new long[dims.length];
        int[] shape = new int[dims.length];
        offset[0] = first;
        shape[0] = n;
        for (int i = 1; i < dims.length; i++) {
            shape[i] = (int) dims[i];
        }
        try {
            if (dataset instanceof ChunkedDataset c) {
                StoredChunks.check(c, chunkBytes, first, n); // before jHDF copies a chunk into the heap
            }
            ByteBuffer b = ChunkLimit.within(chunkBytes, () -> dataset.getSliceDataBuffer(offset, shape));
            int length = Math.toIntExact(n * rowBytes);
            // jHDF makes a new array for a slice: take it as it is, else copy
            boolean whole = b.hasArray() && b.arrayOffset() == 0 && b.array().length == length;
            byte[] out = whole ? b.array() : new byte[length];
            if (!whole) {
                b.duplicate().clear().get(out);
            }
            if (missing != null) {
                missing.fill(out, first, n);
            }
            return out;
        } catch (RuntimeException e) {
            throw failure(first, n, e);
        }
    }

    /**
     * Why rows {@code [first, first + n)} could not be decoded: an {@link UndecodableException}
     * (naming the chunk whose checksum fails, where one does), or a plain {@link IOException} if
     * reading the file failed (which may pass).
     */
    private IOException failure(long first, int n, RuntimeException e) {
        String rows = url.what() + ": rows " + first + ".." + (first + n);
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof IOException io) {
                return new IOException(rows + " cannot be read (" + io + ")", e);
            }
        }
        if (ChunkLimit.cause(e) != null) {
            return new UndecodableException(rows + ": " + ChunkLimit.cause(e).getMessage(), e);
        }
        if (Fletcher32.cause(e) != null && dataset instanceof ChunkedDataset c) {
            String chunk = ChunkLimit.within(chunkBytes, () -> Fletcher32.failing(c, first, n));
            return new UndecodableException(rows + ": " + (chunk == null ? Fletcher32.cause(e).getMessage() : chunk)
                    + " (the file is corrupt)", e);
        }
        return new UndecodableException(rows + " cannot be decoded (" + e.getClass().getSimpleName() + ": "
                + e.getMessage() + ")", e);
    }
}
