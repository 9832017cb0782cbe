package io.tenplex.bench;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.RangeSyntax;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.RegionRead;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Reading a strided region of a 2-D f32 tensor into a buffer, against copying the same number of
 * bytes with one plain memory copy; both move 256 MiB per op (well beyond the 32 MiB L3 cache, so
 * neither side is measured from cache). The region is the left half of every
 * row (a tensor-parallel split along dimension 1, as for row-parallel weights), so its contiguous runs
 * are {@code runKiB} long and one run apart.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RegionReadBenchmark {
    static final int BYTES = 256 << 20;

    @Param({"4", "64"})
    public int runKiB;

    private TensorStore store;
    private DataRef ref;
    private TensorMeta meta;
    private Region region;
    private ByteBuffer src;
    private ByteBuffer dst;

    @Setup(Level.Trial)
    public void setup() {
        int runBytes = runKiB << 10;
        long rows = BYTES / runBytes;
        int rowBytes = 2 * runBytes;
        meta = TensorMeta.of(DType.F32, rows, rowBytes / 4);
        store = new TensorStore(new Allocator(meta.byteSize() + (1L << 30)));
        BlobWriter w = BlobWriter.allocate(store.allocator(), meta.byteSize(), store.checksumBlock());
        ByteBuffer fill = ByteBuffer.allocateDirect(rowBytes);
        for (long r = 0; r < rows; r++) {
            fill.clear();
            w.append(fill);
        }
        store.putTensor(StorePath.parse("/t"), meta, w.take(), w.checksums(), false);
        ref = store.openTensor(StorePath.parse("/t"));
        region = RangeSyntax.parse(":,0:" + runBytes / 4, meta.shape());
        src = ByteBuffer.allocateDirect(BYTES);
        dst = ByteBuffer.allocateDirect(BYTES);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        ref.close();
        store.close();
    }

    @Benchmark
    public int regionRead() {
        dst.clear();
        return new RegionRead(ref, meta, region).copy(dst);
    }

    /** The same strided copy as a hand-written loop of bulk copies: the floor for this access pattern. */
    @Benchmark
    public ByteBuffer stridedLoop() {
        dst.clear();
        int run = runKiB << 10;
        ByteBuffer t = ref.views(0, ref.size())[0];
        for (int r = 0, n = BYTES / run; r < n; r++) {
            dst.put(r * run, t, 2 * r * run, run);
        }
        return dst;
    }

    @Benchmark
    public ByteBuffer memcpy() {
        dst.clear();
        return dst.put(0, src, 0, BYTES);
    }
}
