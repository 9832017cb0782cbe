package io.tenplex.store;

import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import java.nio.ByteBuffer;

/**
 * Reads a region of a tensor as contiguous row-major bytes without materialising the tensor.
 *
 * <p>The region is cut into runs of contiguous bytes: trailing dimensions that the region covers
 * whole are merged with the first dimension to their left, so a region over full rows is one run per
 * outer index, and a contiguous region is a single run (served as a view, zero copy). Runs are
 * visited in row-major order by an odometer over the outer dimensions.
 *
 * <p>Not thread-safe; the {@link DataRef} is borrowed and must stay open while reading.
 */
public final class RegionRead {
    /** Runs at least this long are served as views rather than copied. */
    public static final int VIEW_MIN = 64 * 1024;

    private final DataRef data;
    private final ByteBuffer single; // the tensor's bytes when in one buffer, else null
    private final long total;
    private final long runBytes;
    private final int outer; // number of dimensions enumerated by the odometer
    private final long[] sizes; // region size per outer dim
    private final long[] strides; // byte stride per outer dim
    private final long[] idx;
    private final long firstOffset;
    private long runStart; // byte offset of the current run in the tensor
    private long inRun; // bytes of the current run already produced
    private long done;

    /**
     * @param region must lie within the tensor (see {@link Region#checkWithin})
     */
    public RegionRead(DataRef data, TensorMeta meta, Region region) {
        this.data = data;
        this.single = data.singleBuffer();
        Shape shape = meta.shape();
        region.checkWithin(shape);
        int item = meta.dtype().itemSize();
        int rank = shape.rank();
        int k = rank - 1;
        while (k > 0 && region.range(k).size() == shape.dim(k)) {
            k--;
        }
        long[] elemStrides = shape.strides();
        long inner = 1;
        for (int d = k + 1; d < rank; d++) {
            inner *= shape.dim(d);
        }
        this.runBytes = rank == 0 ? item : region.range(k).size() * inner * item;
        this.outer = Math.max(0, k);
        this.sizes = new long[outer];
        this.strides = new long[outer];
        long base = 0;
        for (int d = 0; d < rank; d++) {
            base += region.range(d).start() * elemStrides[d] * item;
        }
        for (int d = 0; d < outer; d++) {
            sizes[d] = region.range(d).size();
            strides[d] = elemStrides[d] * item;
        }
        this.idx = new long[outer];
        this.runStart = base;
        this.firstOffset = base;
        this.total = region.volume() * item;
    }

    /** Bytes of the whole region. */
    public long byteSize() {
        return total;
    }

    /** Bytes not yet produced. */
    public long remaining() {
        return total - done;
    }

    /** Length of every contiguous run. */
    public long runBytes() {
        return runBytes;
    }

    /** True when the region is one contiguous byte range of the tensor. */
    public boolean isContiguous() {
        return total == 0 || total == runBytes;
    }

    /** Byte offset in the tensor of the region's first byte (with {@link #isContiguous()}, its whole extent). */
    public long firstOffset() {
        return firstOffset;
    }

    /** Byte offset in the tensor just past the region's last byte (the region lies in {@code [firstOffset, endOffset)}). */
    public long endOffset() {
        if (total == 0) {
            return firstOffset;
        }
        long end = firstOffset + runBytes;
        for (int d = 0; d < outer; d++) {
            end += (sizes[d] - 1) * strides[d];
        }
        return end;
    }

    /** Checks the region's bytes against their committed checksums when they are in shared memory ({@link DataRef#verifyShared}). */
    public void verifyShared() {
        data.verifyShared(firstOffset, endOffset() - firstOffset);
    }

    /** True when the next bytes come from a run long enough to be served as a view. */
    public boolean nextIsView() {
        return remaining() > 0 && runBytes - inRun >= Math.min(VIEW_MIN, remaining());
    }

    /**
     * A borrowed view of up to {@code max} next bytes of the current run (it ends early at a chunk
     * boundary of the store's memory).
     */
    public ByteBuffer nextView(int max) {
        long len = Math.min(max, runBytes - inRun);
        ByteBuffer v = data.views(runStart + inRun, len)[0];
        advance(v.remaining());
        return v;
    }

    /** Copies next bytes into {@code dst} until it is full or the region ends; returns the count. */
    public int copy(ByteBuffer dst) {
        int start = dst.position();
        if (single != null) { // hot path: state in locals, one bulk copy per run
            int p = start;
            int limit = dst.limit();
            long rs = runStart;
            long ir = inRun;
            long dn = done;
            while (p < limit && dn < total) {
                int n = (int) Math.min(limit - p, runBytes - ir);
                dst.put(p, single, (int) (rs + ir), n);
                p += n;
                ir += n;
                dn += n;
                if (ir == runBytes && dn < total) {
                    ir = 0;
                    rs = nextRun(rs);
                }
            }
            runStart = rs;
            inRun = ir;
            done = dn;
            dst.position(p);
            return p - start;
        }
        while (dst.hasRemaining() && remaining() > 0) {
            long n = Math.min(dst.remaining(), runBytes - inRun);
            data.copyTo(runStart + inRun, n, dst);
            advance(n);
        }
        return dst.position() - start;
    }

    private void advance(long n) {
        inRun += n;
        done += n;
        if (inRun == runBytes && done < total) {
            inRun = 0;
            runStart = nextRun(runStart);
        }
    }

    /** The odometer: the start of the run after the one at {@code start}. */
    private long nextRun(long start) {
        for (int d = outer - 1; d >= 0; d--) {
            start += strides[d];
            if (++idx[d] < sizes[d]) {
                return start;
            }
            start -= strides[d] * sizes[d];
            idx[d] = 0;
        }
        return start;
    }
}
