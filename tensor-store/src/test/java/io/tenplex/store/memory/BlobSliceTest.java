package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Slices of a blob (the entries of one batch upload) read and write exactly their own bytes of the
 * shared memory, across chunk boundaries too; the memory is counted once and freed with the last
 * reference of the whole and its slices; a segmented writer's checksums are those each segment would
 * have as a blob of its own.
 */
class BlobSliceTest {
    private static final int CHUNK = 1000;

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static Blob filled(Allocator a, byte[] data) {
        Blob b = a.allocateForOverwrite(data.length);
        b.write(0, ByteBuffer.wrap(data));
        return b;
    }

    private static byte[] read(Blob b) {
        byte[] out = new byte[(int) b.size()];
        b.copyTo(0, b.size(), ByteBuffer.wrap(out));
        return out;
    }

    private static byte[] viewed(Blob b, long offset, long length) {
        ByteBuffer out = ByteBuffer.allocate((int) length);
        for (ByteBuffer v : b.views(offset, length)) {
            out.put(v);
        }
        return out.array();
    }

    @Test
    void aSlice_readsItsOwnBytes_byEveryAccessor_acrossChunks() {
        byte[] data = random(3500, 1);
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            Blob whole = filled(a, data);
            for (int[] r : new int[][] {{0, 10}, {995, 10}, {1000, 1000}, {1500, 2000}, {3499, 1}, {700, 0}}) {
                Blob s = whole.slice(r[0], r[1]);
                byte[] want = java.util.Arrays.copyOfRange(data, r[0], r[0] + r[1]);
                assertEquals(ByteBuffer.wrap(want), ByteBuffer.wrap(read(s)), "copyTo " + r[0] + "+" + r[1]);
                assertEquals(ByteBuffer.wrap(want), ByteBuffer.wrap(viewed(s, 0, r[1])), "views");
                if (r[1] > 2) {
                    assertEquals(data[r[0] + 2], s.get(2));
                    assertEquals(ByteBuffer.wrap(want, 1, r[1] - 2), ByteBuffer.wrap(viewed(s, 1, r[1] - 2)));
                }
                boolean oneChunk = r[1] == 0 || r[0] / CHUNK == (r[0] + r[1] - 1) / CHUNK;
                ByteBuffer single = s.singleChunk();
                if (oneChunk) {
                    assertNotNull(single);
                    assertEquals(r[1], single.remaining());
                    assertEquals(ByteBuffer.wrap(want), single.duplicate());
                } else {
                    assertNull(single, "bytes across two chunks are not one buffer");
                }
                assertThrows(IndexOutOfBoundsException.class, () -> s.get(r[1]), "nothing past the slice's end");
                assertThrows(IndexOutOfBoundsException.class, () -> s.views(0, r[1] + 1L));
                s.release();
            }
            whole.release();
            assertEquals(0, a.usedBytes());
        }
    }

    @Test
    void writesAndZeroing_stayWithinTheSlice() {
        byte[] data = random(2500, 2);
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            Blob whole = filled(a, data);
            Blob s = whole.slice(900, 300); // across the first chunk boundary
            s.zero();
            s.write(100, ByteBuffer.wrap(new byte[] {7, 7}));
            byte[] want = data.clone();
            java.util.Arrays.fill(want, 900, 1200, (byte) 0);
            want[1000] = 7;
            want[1001] = 7;
            assertEquals(ByteBuffer.wrap(want), ByteBuffer.wrap(read(whole)));
            assertEquals(200, s.writableView(100, 10_000).remaining(), "to the slice's end, not the chunk's");
            assertThrows(IndexOutOfBoundsException.class, () -> s.write(299, ByteBuffer.wrap(new byte[2])));
            s.release();
            whole.release();
        }
    }

    @Test
    void theMemory_isCountedOnce_andFreedWithTheLastReference() {
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            byte[] data = random(3000, 3);
            Blob whole = filled(a, data);
            Blob first = whole.slice(0, 1000);
            Blob inner = first.slice(500, 200); // a slice of a slice
            Blob last = whole.slice(2000, 1000);
            assertEquals(3000, a.usedBytes(), "slices add nothing");
            whole.release();
            first.release();
            last.release();
            assertEquals(3000, a.usedBytes(), "one slice keeps all of it");
            assertEquals(ByteBuffer.wrap(java.util.Arrays.copyOfRange(data, 500, 700)), ByteBuffer.wrap(read(inner)));
            inner.release();
            assertEquals(0, a.usedBytes());
            assertEquals(0, a.liveBlobs());
            assertThrows(IllegalStateException.class, () -> inner.get(0), "no reads after the last release");
        }
    }

    @Test
    void aSliceOutsideTheBlob_isRefused_andTakesNoReference() {
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            Blob whole = filled(a, random(100, 4));
            assertThrows(IndexOutOfBoundsException.class, () -> whole.slice(50, 51));
            assertThrows(IndexOutOfBoundsException.class, () -> whole.slice(-1, 2));
            assertThrows(IndexOutOfBoundsException.class, () -> whole.slice(Long.MAX_VALUE, 2));
            assertEquals(1, whole.refCount());
            whole.release();
        }
    }

    @Test
    void segmentedChecksums_areEachSegmentsOwn() {
        long[] sizes = {0, 1, 999, 1000, 1001, 0, 2500, 7, 0};
        int total = (int) java.util.Arrays.stream(sizes).sum();
        byte[] data = random(total, 5);
        Random chop = new Random(6);
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            BlobWriter w = BlobWriter.allocateSegmented(a, sizes, 400);
            for (int at = 0; at < total; ) { // fed in pieces of any size, across segments
                int n = Math.min(total - at, 1 + chop.nextInt(1300));
                w.append(ByteBuffer.wrap(data, at, n));
                at += n;
            }
            BlockChecksums[] got = w.segmentChecksums();
            assertThrows(IllegalStateException.class, w::checksums);
            Blob whole = w.take();
            long at = 0;
            for (int i = 0; i < sizes.length; i++) {
                Blob own = filled(a, java.util.Arrays.copyOfRange(data, (int) at, (int) (at + sizes[i])));
                BlockChecksums want = BlockChecksums.compute(own, 400);
                assertEquals(want.blockCount(), got[i].blockCount(), "segment " + i);
                for (int b = 0; b < want.blockCount(); b++) {
                    assertEquals(want.block(b), got[i].block(b), "segment " + i + " block " + b);
                }
                assertEquals(want.range(0, sizes[i]), got[i].range(0, sizes[i]));
                own.release();
                at += sizes[i];
            }
            whole.release();
        }
    }

    @Test
    void aSegmentedWriter_refusesBadSizes_beforeAllocating() {
        try (Allocator a = new Allocator(1 << 20, CHUNK)) {
            assertThrows(IllegalArgumentException.class, () -> BlobWriter.allocateSegmented(a, new long[] {5, -1}, 400));
            assertThrows(ArithmeticException.class,
                    () -> BlobWriter.allocateSegmented(a, new long[] {Long.MAX_VALUE, 1}, 400));
            assertEquals(0, a.usedBytes());
        }
    }
}
