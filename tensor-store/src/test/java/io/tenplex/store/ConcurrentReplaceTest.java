package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Readers racing a writer that replaces a tensor see one version whole, never a mix. */
class ConcurrentReplaceTest {
    private static final int SIZE = 256 * 1024;
    private static final int VERSIONS = 300;

    @Test
    void replace_isAtomicForReaders_andFreesEveryOldVersion() throws Exception {
        TensorStore store = new TensorStore(new Allocator(64L << 20, 64 * 1024), 4096);
        TensorMeta meta = TensorMeta.of(DType.U8, SIZE);
        Fixtures.putTensor(store, "/t", meta, filled(0), false);
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong reads = new AtomicLong();
        CountDownLatch readersStarted = new CountDownLatch(2);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<?>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                readers.add(pool.submit(() -> {
                    readersStarted.countDown();
                    ByteBuffer out = ByteBuffer.allocate(SIZE);
                    while (!done.get()) {
                        try (DataRef ref = store.openTensor(StorePath.parse("/t"))) {
                            out.clear();
                            new RegionRead(ref, meta, Region.whole(meta.shape())).copy(out);
                        }
                        byte first = out.get(0);
                        for (int i = 1; i < SIZE; i++) {
                            if (out.get(i) != first) {
                                throw new AssertionError("mixed versions: byte 0 is " + first + ", byte " + i + " is "
                                        + out.get(i));
                            }
                        }
                        reads.incrementAndGet();
                    }
                    return null;
                }));
            }
            readersStarted.await();
            for (int v = 1; v <= VERSIONS; v++) {
                Fixtures.putTensor(store, "/t", meta, filled(v), true);
            }
            done.set(true);
            for (Future<?> f : readers) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(reads.get() > 0);
        assertEquals(SIZE, store.allocator().usedBytes());
        assertEquals(1, store.allocator().liveBlobs());
        store.close();
    }

    private static byte[] filled(int v) {
        byte[] b = new byte[SIZE];
        Arrays.fill(b, (byte) v);
        return b;
    }
}
