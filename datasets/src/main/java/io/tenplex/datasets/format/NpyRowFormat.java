package io.tenplex.datasets.format;

import io.tenplex.store.Npy;
import java.io.IOException;
import java.io.InputStream;

/** {@code npy}: one sample per row (first dimension) of a C-order {@code .npy} array; the header is skipped. */
final class NpyRowFormat implements SampleFormat {
    static final String NAME = "npy";
    /** The longest header read. */
    private static final int MAX_HEADER = 1 << 17;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Samples find(InputStream in, long size, String source) throws IOException {
        byte[] head = new byte[(int) Math.min(size, MAX_HEADER)];
        int n = in.readNBytes(head, 0, head.length);
        Npy.Header h;
        try {
            h = Npy.parse(head, n);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + " is not a NumPy file we read: " + e.getMessage());
        }
        long[] dims = h.meta().shape().dims();
        if (dims.length == 0) {
            throw new IllegalArgumentException(source + " holds a scalar, not rows");
        }
        long rows = dims[0];
        long row = rows == 0 ? 0 : h.meta().byteSize() / rows;
        if (h.dataOffset() + h.meta().byteSize() != size) {
            throw new IllegalArgumentException(source + " has " + size + " bytes, the header says "
                    + (h.dataOffset() + h.meta().byteSize()));
        }
        return Samples.fixed(h.dataOffset(), row, Math.toIntExact(rows));
    }
}
