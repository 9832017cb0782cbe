package io.tenplex.datasets;

import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.store.Npy;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Builds index entries for common sample files: fixed-size records, {@code .npy} arrays (one sample
 * per row), TFRecord files (one sample per record, framing included so that shard files stay valid
 * TFRecord files) and newline-delimited text (one sample per line, its newline included).
 */
public final class IndexBuilders {
    private IndexBuilders() {}

    /** The formats, by the name the CLI takes. */
    public enum Format {
        RECORDS, NPY, TFRECORD, LINES
    }

    /** One index file entry for {@code file} (the URL written is its absolute path). */
    public static DatasetIndex.File build(Path file, Format format, long recordSize) throws IOException {
        return switch (format) {
            case RECORDS -> records(file, recordSize);
            case NPY -> npyRows(file);
            case TFRECORD -> tfrecords(file);
            case LINES -> lines(file);
        };
    }

    static DatasetIndex.File records(Path file, long recordSize) throws IOException {
        if (recordSize < 1) {
            throw new IllegalArgumentException("record size " + recordSize + " (expected: >= 1)");
        }
        long size = Files.size(file);
        if (size % recordSize != 0) {
            throw new IllegalArgumentException(file + " has " + size + " bytes, not a multiple of the record size "
                    + recordSize);
        }
        int n = Math.toIntExact(size / recordSize);
        long[] b = new long[n];
        long[] e = new long[n];
        for (int i = 0; i < n; i++) {
            b[i] = i * recordSize;
            e[i] = b[i] + recordSize;
        }
        return new DatasetIndex.File(file.toAbsolutePath().toString(), b, e);
    }

    static DatasetIndex.File npyRows(Path file) throws IOException {
        byte[] head = new byte[(int) Math.min(Files.size(file), 1 << 17)];
        try (InputStream in = Files.newInputStream(file)) {
            int n = in.readNBytes(head, 0, head.length);
            Npy.Header h;
            try {
                h = Npy.parse(head, n);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(file + " is not a NumPy file we read: " + e.getMessage());
            }
            long[] dims = h.meta().shape().dims();
            if (dims.length == 0) {
                throw new IllegalArgumentException(file + " holds a scalar, not rows");
            }
            long rows = dims[0];
            long row = rows == 0 ? 0 : h.meta().byteSize() / rows;
            if (h.dataOffset() + h.meta().byteSize() != Files.size(file)) {
                throw new IllegalArgumentException(file + " has " + Files.size(file) + " bytes, the header says "
                        + (h.dataOffset() + h.meta().byteSize()));
            }
            long[] b = new long[Math.toIntExact(rows)];
            long[] e = new long[b.length];
            for (int i = 0; i < b.length; i++) {
                b[i] = h.dataOffset() + i * row;
                e[i] = b[i] + row;
            }
            return new DatasetIndex.File(file.toAbsolutePath().toString(), b, e);
        }
    }

    static DatasetIndex.File tfrecords(Path file) throws IOException {
        long size = Files.size(file);
        LongList b = new LongList();
        LongList e = new LongList();
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            byte[] header = new byte[12];
            long pos = 0;
            while (pos < size) {
                if (in.readNBytes(header, 0, 12) != 12) {
                    throw new IllegalArgumentException(file + ": truncated TFRecord header at byte " + pos);
                }
                long len = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getLong();
                long end = pos + 12 + len + 4;
                if (len < 0 || end > size) {
                    throw new IllegalArgumentException(file + ": TFRecord at byte " + pos + " claims " + len
                            + " bytes, past the end of the file (" + size + ")");
                }
                in.skipNBytes(len + 4);
                b.add(pos);
                e.add(end);
                pos = end;
            }
        }
        return new DatasetIndex.File(file.toAbsolutePath().toString(), b.toArray(), e.toArray());
    }

    static DatasetIndex.File lines(Path file) throws IOException {
        LongList b = new LongList();
        LongList e = new LongList();
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            byte[] buf = new byte[1 << 16];
            long pos = 0;
            long start = 0;
            for (int n; (n = in.read(buf)) > 0; ) {
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        b.add(start);
                        e.add(pos + i + 1);
                        start = pos + i + 1;
                    }
                }
                pos += n;
            }
            if (start < pos) {
                b.add(start); // a last line without its newline
                e.add(pos);
            }
        }
        return new DatasetIndex.File(file.toAbsolutePath().toString(), b.toArray(), e.toArray());
    }

    private static final class LongList {
        private long[] a = new long[1024];
        private int n;

        void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        long[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }
}
