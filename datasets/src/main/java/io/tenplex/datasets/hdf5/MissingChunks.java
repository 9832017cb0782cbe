package io.tenplex.datasets.hdf5;

import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.exceptions.HdfException;
import io.jhdf.object.datatype.DataType;
import io.jhdf.object.datatype.FloatingPoint;
import io.jhdf.object.datatype.OrderedDataType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Chunks of a chunked dataset that were never written read as the dataset's fill value (as HDF5
 * and h5py read them); jHDF's slices leave them zero, so a decoded block whose dataset has a
 * non-zero fill value gets the fill value written over the parts of it that no chunk holds.
 */
final class MissingChunks {
    private final ChunkedDataset dataset;
    private final long[] dims;
    private final int[] chunk;
    private final byte[] fill; // one element's bytes

    private MissingChunks(ChunkedDataset dataset, byte[] fill) {
        this.dataset = dataset;
        this.dims = dataset.getDimensionsAsLong();
        this.chunk = dataset.getChunkDimensions();
        this.fill = fill;
    }

    /** The fixer for {@code dataset}, or null when its fill value is zero (what the slices hold). */
    static MissingChunks of(ChunkedDataset dataset) {
        Object value = dataset.getFillValue();
        if (!(value instanceof Number n)) {
            return null;
        }
        DataType t = dataset.getDataType();
        ByteOrder order = t instanceof OrderedDataType o ? o.getByteOrder() : ByteOrder.LITTLE_ENDIAN;
        ByteBuffer b = ByteBuffer.allocate(8).order(order);
        int size = t.getSize();
        if (t instanceof FloatingPoint) {
            b = size == 4 ? b.putFloat(n.floatValue()) : b.putDouble(n.doubleValue());
        } else if (size == 1 || size == 2 || size == 4 || size == 8) {
            long v = n.longValue();
            b = size == 1 ? b.put((byte) v) : size == 2 ? b.putShort((short) v) : size == 4 ? b.putInt((int) v) : b.putLong(v);
        } else {
            return null;
        }
        byte[] fill = java.util.Arrays.copyOf(b.array(), size);
        boolean zero = true;
        for (byte x : fill) {
            zero &= x == 0;
        }
        return zero ? null : new MissingChunks(dataset, fill);
    }

    /**
     * Writes the fill value over the parts of {@code block} (rows {@code first} to {@code first + n},
     * every inner index, C order) that no stored chunk holds.
     */
    void fill(byte[] block, long first, int n) {
        long[] at = new long[dims.length];
        at[0] = first / chunk[0] * chunk[0];
        while (at[0] < first + n) {
            if (!stored(at)) {
                fillChunk(block, first, n, at);
            }
            if (!next(at)) {
                at[0] += chunk[0];
            }
        }
    }

    /** Steps the inner chunk coordinates; false when they wrap around to 0. */
    private boolean next(long[] at) {
        for (int d = dims.length - 1; d > 0; d--) {
            at[d] += chunk[d];
            if (at[d] < dims[d]) {
                return true;
            }
            at[d] = 0;
        }
        return false;
    }

    private boolean stored(long[] at) {
        int[] offset = new int[at.length];
        for (int d = 0; d < at.length; d++) {
            offset[d] = (int) at[d];
        }
        try {
            dataset.getRawChunkBuffer(offset);
            return true;
        } catch (HdfException e) {
            return false;
        }
    }

    /** Fills the chunk at {@code at} where it overlaps the block, element by element. */
    private void fillChunk(byte[] block, long first, int n, long[] at) {
        long lo = Math.max(at[0], first);
        long hi = Math.min(Math.min(at[0] + chunk[0], dims[0]), first + n);
        long[] idx = new long[dims.length];
        for (long r = lo; r < hi; r++) {
            idx[0] = r - first;
            fillInner(block, at, idx, 1);
        }
    }

    private void fillInner(byte[] block, long[] at, long[] idx, int d) {
        if (d == dims.length) {
            long e = 0;
            for (int i = 0; i < dims.length; i++) {
                e = e * (i == 0 ? 1 : dims[i]) + idx[i];
            }
            System.arraycopy(fill, 0, block, (int) (e * fill.length), fill.length);
            return;
        }
        long end = Math.min(at[d] + chunk[d], dims[d]);
        for (long i = at[d]; i < end; i++) {
            idx[d] = i;
            fillInner(block, at, idx, d + 1);
        }
    }
}
