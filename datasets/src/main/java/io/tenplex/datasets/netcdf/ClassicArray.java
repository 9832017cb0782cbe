package io.tenplex.datasets.netcdf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * One variable of an open classic file served as rows: its rows along the first dimension (the
 * records, for a record variable), the bytes of a row, and reads of any byte range of its rows in C
 * order, as stored (big-endian), straight from the file: a fixed-size variable's rows are
 * contiguous, a record variable's row {@code i} lies at {@code begin + i * recsize}. Checked when
 * opened to lie within the file and the limits. Thread-safe.
 */
final class ClassicArray {
    final String url;
    private final FileChannel channel;
    private final long rows;
    private final long rowBytes;
    private final long begin;
    private final long stride; // the file bytes from one row to the next

    private ClassicArray(String url, FileChannel channel, long rows, long rowBytes, long begin, long stride) {
        this.url = url;
        this.channel = channel;
        this.rows = rows;
        this.rowBytes = rowBytes;
        this.begin = begin;
        this.stride = stride;
    }

    /**
     * The variable {@code v} of the file open on {@code channel}, checked.
     *
     * @param url its canonical URL
     * @param what the variable and file, for messages
     * @throws IllegalArgumentException if it is a scalar, over the limits, or its data lie outside the file
     */
    static ClassicArray open(String url, String what, CdfHeader h, CdfVariable v, FileChannel channel, long fileSize) {
        if (v.scalar()) {
            throw new IllegalArgumentException(what + " is a scalar, not rows");
        }
        long rows = v.record() ? h.numrecs : v.dims()[0];
        io.tenplex.datasets.hdf5.RowLimits.checkRows(what, rows);
        io.tenplex.datasets.hdf5.RowLimits.checkRowBytes(what, v.rowBytes());
        long stride = v.record() ? h.recsize : v.rowBytes();
        if (rows > 0 && v.rowBytes() > 0) {
            long end;
            try {
                end = Math.addExact(Math.addExact(v.begin(), Math.multiplyExact(rows - 1, stride)), v.rowBytes());
            } catch (ArithmeticException e) {
                end = Long.MAX_VALUE;
            }
            if (v.begin() < h.headerEnd || end > fileSize) {
                throw new IllegalArgumentException(what + " lies at bytes " + v.begin() + ".." + (end == Long.MAX_VALUE
                        ? "(overflow)" : end) + ", outside the data of the file (bytes " + h.headerEnd + ".." + fileSize
                        + "; truncated?)");
            }
        }
        return new ClassicArray(url, channel, rows, v.rowBytes(), v.begin(), stride);
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

    /** Fills {@code dst} (exactly its remaining bytes) with the variable's bytes from {@code from}. */
    void read(long from, ByteBuffer dst) throws IOException {
        if (from < 0 || from > bytes() - dst.remaining()) {
            throw new IOException(url + ": bytes " + from + "+" + dst.remaining() + " beyond its " + bytes());
        }
        if (stride == rowBytes) {
            readFile(begin + from, dst);
            return;
        }
        int limit = dst.limit();
        try {
            for (long pos = from; dst.hasRemaining(); ) {
                long row = pos / rowBytes;
                long off = pos - row * rowBytes;
                int n = (int) Math.min(dst.remaining(), rowBytes - off);
                dst.limit(dst.position() + n);
                readFile(begin + row * stride + off, dst);
                dst.limit(limit);
                pos += n;
            }
        } finally {
            dst.limit(limit);
        }
    }

    private void readFile(long pos, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int n = channel.read(dst, pos);
            if (n < 0) {
                throw new IOException(url + " ends before byte " + pos + " (truncated since it was mounted?)");
            }
            pos += n;
        }
    }
}
