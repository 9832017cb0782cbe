package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What every {@link BlobBacking} promises, and what the {@link Allocator} over it accounts; a new
 * backing gets these tests by extending this class.
 */
abstract class BlobBackingContract {

    /** A fresh backing whose chunks hold {@code chunkSize} bytes. */
    abstract BlobBacking backing(int chunkSize);

    @Test
    void allocate_oddSizes_givesFullChunksThenTheRest() {
        BlobBacking b = backing(100);
        for (long size : new long[] {1, 99, 100, 101, 299, 300, 1001}) {
            BlobBacking.Memory m = b.allocate(size);
            ByteBuffer[] chunks = m.chunks();
            assertEquals((size + 99) / 100, chunks.length, "chunks of " + size);
            for (int i = 0; i < chunks.length - 1; i++) {
                assertEquals(100, chunks[i].capacity(), "chunk " + i + " of " + size);
            }
            assertEquals(size - 100L * (chunks.length - 1), chunks[chunks.length - 1].capacity());
            m.free();
        }
    }

    @Test
    void allocate_zeroBytes_givesNoChunks() {
        BlobBacking.Memory m = backing(64).allocate(0);
        assertEquals(0, m.chunks().length);
        m.free();
    }

    @Test
    void allocate_givesZeroFilledWritableMemory() {
        BlobBacking.Memory m = backing(64).allocate(130);
        for (ByteBuffer c : m.chunks()) {
            for (int i = 0; i < c.capacity(); i++) {
                assertEquals(0, c.get(i));
                c.put(i, (byte) 7);
            }
        }
        m.free();
    }

    @Test
    void allocator_overBacking_accountsOddSizesExactly() {
        Allocator a = new Allocator(10_000, backing(64));
        Blob x = a.allocate(65);
        Blob y = a.allocate(4097);
        assertEquals(65 + 4097, a.usedBytes());
        assertEquals(2, a.liveBlobs());
        assertEquals(10_000 - 65 - 4097, a.freeBytes());
        x.release();
        y.release();
        assertEquals(0, a.usedBytes());
        a.close();
    }

    @Test
    void allocator_overBudget_leavesTheBackingUntouched() {
        Counting counting = new Counting(backing(64));
        Allocator a = new Allocator(100, counting);
        Blob x = a.allocate(60);
        assertThrows(OutOfBudgetException.class, () -> a.allocate(41));
        assertEquals(1, counting.allocated.get());
        x.release();
        a.close();
    }

    @Test
    void release_freesOnceWithTheLastReference() {
        Counting counting = new Counting(backing(64));
        Allocator a = new Allocator(1000, counting);
        Blob x = a.allocate(200);
        x.write(190, ByteBuffer.wrap(new byte[] {1, 2, 3}));
        x.retain();
        x.release();
        assertEquals(0, counting.freed.get());
        ByteBuffer back = ByteBuffer.allocate(3);
        x.copyTo(190, 3, back);
        assertArrayEquals(new byte[] {1, 2, 3}, back.array());
        x.release();
        assertEquals(1, counting.freed.get());
        assertThrows(IllegalStateException.class, x::release);
        assertEquals(1, counting.freed.get());
        a.close();
    }

    @Test
    void failingBacking_leavesNothingReserved() {
        BlobBacking failing = new Counting(backing(64)) {
            @Override
            public Memory allocate(long size) {
                throw new OutOfBudgetException("backing full", true);
            }
        };
        Allocator a = new Allocator(1000, failing);
        assertTrue(assertThrows(OutOfBudgetException.class, () -> a.allocate(10)).everFits());
        assertEquals(0, a.usedBytes());
        assertEquals(0, a.liveBlobs());
        a.close();
    }

    /** Counts what passes through to the backing under test. */
    static class Counting implements BlobBacking {
        final BlobBacking inner;
        final AtomicInteger allocated = new AtomicInteger();
        final AtomicInteger freed = new AtomicInteger();

        Counting(BlobBacking inner) {
            this.inner = inner;
        }

        @Override
        public int chunkSize() {
            return inner.chunkSize();
        }

        @Override
        public Memory allocate(long size) {
            Memory m = inner.allocate(size);
            allocated.incrementAndGet();
            return new Memory() {
                @Override
                public ByteBuffer[] chunks() {
                    return m.chunks();
                }

                @Override
                public void free() {
                    freed.incrementAndGet();
                    m.free();
                }
            };
        }
    }
}
