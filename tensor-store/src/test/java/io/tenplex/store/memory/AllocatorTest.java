package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class AllocatorTest {

    @Test
    void allocate_accountsExactly_andReleaseReturnsEverything() {
        Allocator a = new Allocator(1000, 64);
        Blob b = a.allocate(300);
        assertEquals(300, a.usedBytes());
        assertEquals(700, a.freeBytes());
        b.retain();
        b.release();
        assertEquals(300, a.usedBytes());
        b.release();
        assertEquals(0, a.usedBytes());
        assertEquals(0, a.liveBlobs());
        a.close();
    }

    @Test
    void allocate_overBudget_throwsAndAllocatesNothing() {
        Allocator a = new Allocator(100, 64);
        Blob b = a.allocate(60);
        OutOfBudgetException e = assertThrows(OutOfBudgetException.class, () -> a.allocate(41));
        assertTrue(e.everFits());
        assertFalse(assertThrows(OutOfBudgetException.class, () -> a.allocate(101)).everFits());
        assertEquals(60, a.usedBytes());
        b.release();
        a.close();
    }

    @Test
    void close_withOutstandingMemory_throws() {
        Allocator a = new Allocator(100);
        Blob b = a.allocate(10);
        assertThrows(IllegalStateException.class, a::close);
        b.release();
        a.close();
    }

    /** The suites run with {@code tenplex.store.traceBlobs}: a leak names the code that allocated it, a freed blob not. */
    @Test
    void close_withOutstandingMemory_namesWhereItWasAllocated_whenTraced() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Boolean.getBoolean("tenplex.store.traceBlobs"));
        Allocator a = new Allocator(100);
        Blob freed = a.allocate(5);
        freed.release();
        Blob kept = leakedHere(a);
        String message = assertThrows(IllegalStateException.class, a::close).getMessage();
        assertTrue(message.contains("10 bytes in 1 blobs") && message.contains("1 allocated at:")
                && message.contains("AllocatorTest.leakedHere"), message);
        assertEquals(1, message.split("allocated at:", -1).length - 1, "the freed blob's site is not named: " + message);
        kept.release();
        a.close();
    }

    private static Blob leakedHere(Allocator a) {
        return a.allocate(10);
    }

    @Test
    void blob_acrossChunks_writesAndReadsBack() {
        Allocator a = new Allocator(10_000, 64);
        Blob b = a.allocate(1000);
        byte[] data = new byte[1000];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 7);
        }
        b.write(0, ByteBuffer.wrap(data, 0, 500));
        b.write(500, ByteBuffer.wrap(data, 500, 500));
        ByteBuffer out = ByteBuffer.allocate(900);
        b.copyTo(50, 900, out);
        byte[] expect = new byte[900];
        System.arraycopy(data, 50, expect, 0, 900);
        assertArrayEquals(expect, out.array());
        ByteBuffer[] views = b.views(60, 10);
        assertEquals(2, views.length);
        assertEquals(4, views[0].remaining());
        assertEquals(data[63], views[0].get(3));
        assertEquals(data[64], views[1].get(0));
        assertEquals(null, b.viewInChunk(60, 10));
        b.release();
        assertThrows(IllegalStateException.class, () -> b.get(0));
        a.close();
    }

    @Test
    void readsOutsideBlob_rejected() {
        Allocator a = new Allocator(100);
        Blob b = a.allocate(10);
        assertThrows(IndexOutOfBoundsException.class, () -> b.views(5, 6));
        assertThrows(IndexOutOfBoundsException.class, () -> b.write(8, ByteBuffer.allocate(3)));
        b.release();
        a.close();
    }

    /** Sizes users have: 1 MiB + 1, an f32 [1000,1000] tensor, a GPT-2 embedding, odd multi-chunk sizes. */
    @Property(tries = 40)
    void allocate_anySize_fitsWritesEveryByteAndReleasesExactly(@ForAll("sizes") long size) {
        Allocator a = new Allocator(1L << 30);
        Blob b = a.allocate(size);
        assertEquals(size, a.usedBytes());
        byte[] edge = {1, 2, 3};
        b.write(size - edge.length, ByteBuffer.wrap(edge));
        ByteBuffer back = ByteBuffer.allocate(edge.length);
        b.copyTo(size - edge.length, edge.length, back);
        assertArrayEquals(edge, back.array());
        for (ByteBuffer v : b.views(0, size)) {
            if (v.remaining() >= (1 << 20)) {
                assertEquals(0, v.alignmentOffset(0, 4096), "large chunks start on a page");
            }
        }
        b.release();
        assertEquals(0, a.usedBytes());
        a.close();
    }

    @Provide
    Arbitrary<Long> sizes() {
        return Arbitraries.oneOf(
                Arbitraries.of(1_048_577L, 4_000_000L, 50_257L * 768 * 4, (1L << 20) + 4095, (1L << 20) + 4097,
                        3L * (1 << 20) - 1),
                Arbitraries.longs().between(1 << 20, 8 << 20),
                Arbitraries.longs().between(3, 70_000));
    }

    @Test
    void allocate_unalignedSizesInMultiChunkBlobs_accountExactly() {
        Allocator a = new Allocator(1L << 30, (1 << 20) + 3);
        Blob b = a.allocate(5L * ((1 << 20) + 3) - 7);
        assertEquals(5L * ((1 << 20) + 3) - 7, a.usedBytes());
        b.release();
        a.close();
    }
}
