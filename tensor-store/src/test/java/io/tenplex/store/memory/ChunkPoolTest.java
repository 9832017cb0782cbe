package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** Freed chunks kept for reuse: zeroed for {@code allocate}, not for overwrite; bounded; never in the way. */
class ChunkPoolTest {
    private static final int MIB = 1 << 20;

    private static void fill(Blob b, byte v) {
        ByteBuffer src = ByteBuffer.allocate((int) b.size());
        while (src.hasRemaining()) {
            src.put(v);
        }
        b.write(0, src.flip());
    }

    private static boolean all(Blob b, byte v) {
        for (long i = 0; i < b.size(); i += 4093) {
            if (b.get(i) != v) {
                return false;
            }
        }
        return b.get(b.size() - 1) == v;
    }

    @Test
    void freedChunks_areReused_zeroedForAllocate_butNotForOverwrite() {
        Allocator a = new Allocator(64L * MIB, MIB);
        Blob first = a.allocateForOverwrite(3 * MIB - 5); // two full chunks and an odd-sized one
        fill(first, (byte) 7);
        first.release();
        assertEquals(0, a.usedBytes());
        assertTrue(a.pooledBytes() >= 3 * MIB - 5, "pooled " + a.pooledBytes());
        Blob again = a.allocateForOverwrite(3 * MIB - 5);
        assertTrue(all(again, (byte) 7), "the overwrite path gets the freed memory as it was");
        assertEquals(0, a.pooledBytes());
        again.release();
        Blob zeroed = a.allocate(3 * MIB - 5);
        assertTrue(all(zeroed, (byte) 0), "allocate zeroes recycled memory");
        assertEquals(3 * MIB - 5, a.usedBytes());
        zeroed.release();
        a.close();
        assertEquals(0, a.pooledBytes(), "close gives the pool back");
    }

    @Test
    void pool_isBoundedByHalfTheBudget() {
        Allocator a = new Allocator(32L * MIB, MIB);
        Blob[] blobs = new Blob[30];
        for (int i = 0; i < blobs.length; i++) {
            blobs[i] = a.allocateForOverwrite(MIB);
        }
        for (Blob b : blobs) {
            b.release();
        }
        assertTrue(a.pooledBytes() > 8L * MIB && a.pooledBytes() <= 16L * MIB, "pooled " + a.pooledBytes());
        a.close();
    }

    @Test
    void pooledMemory_isGivenBack_whenAnAllocationNeedsTheBudget() {
        Allocator a = new Allocator(16L * MIB, MIB);
        a.allocateForOverwrite(2 * MIB).release();
        assertTrue(a.pooledBytes() >= 2 * MIB);
        Blob big = a.allocate(16L * MIB - MIB); // fits the budget only without the pool
        assertTrue(a.pooledBytes() + a.usedBytes() <= a.budget(), "pooled " + a.pooledBytes());
        assertTrue(all(big, (byte) 0));
        assertThrows(OutOfBudgetException.class, () -> a.allocate(2 * MIB));
        big.release();
        a.close();
    }

    @Test
    void close_stillFailsOnLeaks_withAPool() {
        Allocator a = new Allocator(16L * MIB, MIB);
        a.allocateForOverwrite(MIB).release();
        Blob leaked = a.allocateForOverwrite(MIB);
        assertThrows(IllegalStateException.class, a::close);
        leaked.release();
        a.close();
    }

    @Test
    void smallChunks_andPoolsOfZero_keepNothing() {
        Allocator a = new Allocator(1L << 30, 4096);
        a.allocateForOverwrite(64 * 4096).release();
        assertEquals(0, a.pooledBytes(), "chunks below 64 KiB are not kept");
        a.close();
        Allocator none = new Allocator(64L * MIB, new OffHeapBacking(MIB));
        none.allocate(MIB).release();
        assertEquals(0, none.pooledBytes());
        none.close();
    }
}
