package io.tenplex.store;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Small helpers to put known bytes into a store. */
public final class Fixtures {
    private Fixtures() {
    }

    /** Little-endian float32 values 0, 1, 2, ... */
    public static byte[] iota32(int n) {
        ByteBuffer b = ByteBuffer.allocate(n * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            b.putFloat(i);
        }
        return b.array();
    }

    public static void putTensor(TensorStore store, String path, TensorMeta meta, byte[] data, boolean replace) {
        BlobWriter w = BlobWriter.allocate(store.allocator(), data.length, store.checksumBlock());
        w.append(ByteBuffer.wrap(data));
        store.putTensor(StorePath.parse(path), meta, w.take(), w.checksums(), replace);
    }

    public static void putF32(TensorStore store, String path, long... dims) {
        TensorMeta m = TensorMeta.of(DType.F32, dims);
        putTensor(store, path, m, iota32((int) m.shape().volume()), false);
    }

    public static void putFile(TensorStore store, String path, byte[] data, boolean replace) {
        BlobWriter w = BlobWriter.allocate(store.allocator(), data.length, store.checksumBlock());
        w.append(ByteBuffer.wrap(data));
        store.putFile(StorePath.parse(path), w.take(), w.checksums(), replace);
    }

    public static byte[] readAll(TensorStore store, String path) {
        try (DataRef r = store.open(StorePath.parse(path))) {
            ByteBuffer out = ByteBuffer.allocate((int) r.size());
            r.copyTo(0, r.size(), out);
            return out.array();
        }
    }
}
