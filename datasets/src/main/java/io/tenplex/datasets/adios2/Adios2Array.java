package io.tenplex.datasets.adios2;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * One global array of an open ADIOS2 file served as rows: its rows along the first dimension, step
 * after step (a variable of {@code S} steps of shape {@code [N, ...]} has {@code S * N} rows), each
 * row row-major as ADIOS2 returns it (little-endian). A step written as one block covering the shape
 * is read straight from its subfile; otherwise each row is assembled from the blocks that hold part of
 * it. Checked when opened: within the limits, and each step's blocks cover its shape exactly once.
 * Thread-safe.
 */
final class Adios2Array {
    final String url;
    private final Adios2Variable var;
    private final DataFiles data;
    private final long stepRows;
    private final long rowBytes;
    private final long rows;
    private final List<List<Adios2Variable.Block>> steps; // each sorted by start in the first dimension

    private Adios2Array(String url, Adios2Variable var, DataFiles data, long stepRows, long rowBytes) {
        this.url = url;
        this.var = var;
        this.data = data;
        this.stepRows = stepRows;
        this.rowBytes = rowBytes;
        this.rows = stepRows * var.steps().size();
        this.steps = var.steps().stream().map(s -> s.stream()
                .sorted(Comparator.comparingLong(b -> b.start()[0])).toList()).toList();
    }

    /**
     * The variable {@code v}, checked.
     *
     * @param what the variable and file, for messages
     * @throws IllegalArgumentException if it is refused, over the limits, or not covered by its blocks
     */
    static Adios2Array open(String url, String what, Adios2Variable v, DataFiles data) {
        if (v.refusal() != null) {
            throw new IllegalArgumentException(what + " is refused: " + v.refusal());
        }
        long[] shape = v.shape();
        long rowBytes;
        long rows;
        try {
            rowBytes = v.type().size;
            for (int d = 1; d < shape.length; d++) {
                rowBytes = Math.multiplyExact(rowBytes, shape[d]);
            }
            rows = Math.multiplyExact(shape[0], (long) v.steps().size());
            Math.multiplyExact(rows, rowBytes);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(what + " has a shape " + Arrays.toString(shape) + " whose size overflows");
        }
        io.tenplex.datasets.hdf5.RowLimits.checkRows(what, rows);
        io.tenplex.datasets.hdf5.RowLimits.checkRowBytes(what, rowBytes);
        long[] pairs = {Blocks.MAX_PAIRS};
        for (List<Adios2Variable.Block> step : v.steps()) {
            String wrong = Blocks.coverage(step, shape, pairs);
            if (wrong != null) {
                throw new IllegalArgumentException(what + " is refused: " + wrong);
            }
        }
        return new Adios2Array(url, v, data, shape[0], rowBytes);
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

    Adios2Variable variable() {
        return var;
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the array's bytes from {@code from}. */
    void read(long from, ByteBuffer dst) throws IOException {
        if (from < 0 || from > bytes() - dst.remaining()) {
            throw new IOException(url + ": bytes " + from + "+" + dst.remaining() + " beyond its " + bytes());
        }
        int limit = dst.limit();
        try {
            for (long pos = from; dst.hasRemaining(); ) {
                long row = pos / rowBytes;
                long off = pos - row * rowBytes;
                int n = (int) Math.min(dst.remaining(), rowBytes - off);
                dst.limit(dst.position() + n);
                readRow((int) (row / stepRows), row % stepRows, off, dst);
                dst.limit(limit);
                pos += n;
            }
        } finally {
            dst.limit(limit);
        }
    }

    /** Reads bytes {@code [off, off + dst.remaining())} of row {@code i} of step {@code s}. */
    private void readRow(int s, long i, long off, ByteBuffer dst) throws IOException {
        List<Adios2Variable.Block> blocks = steps.get(s);
        if (blocks.size() == 1) { // covers the shape (checked): rows are contiguous
            Adios2Variable.Block b = blocks.get(0);
            readFile(data.channel(b.subfile()), b.pos() + i * rowBytes + off, dst);
            return;
        }
        if (off == 0 && dst.remaining() == rowBytes) {
            RowAssembly.row(blocks, var.shape(), var.type().size, i, dst.slice(), data, url);
            dst.position(dst.limit());
            return;
        }
        ByteBuffer whole = ByteBuffer.allocate((int) rowBytes);
        RowAssembly.row(blocks, var.shape(), var.type().size, i, whole, data, url);
        dst.put(whole.position((int) off).limit((int) off + dst.remaining()));
    }

    static void readFile(FileChannel ch, long pos, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int n = ch.read(dst, pos);
            if (n < 0) {
                throw new IOException("an ADIOS2 data file ends before byte " + pos + " (truncated since it was mounted?)");
            }
            pos += n;
        }
    }
}
