package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class OffHeapBackingTest extends BlobBackingContract {

    @Override
    BlobBacking backing(int chunkSize) {
        return new OffHeapBacking(chunkSize);
    }

    @Test
    void largeChunks_startOnAPage_andSmallOnesAreDirect() {
        BlobBacking.Memory m = new OffHeapBacking(1 << 20).allocate((1 << 20) + 4097);
        ByteBuffer[] c = m.chunks();
        assertEquals(0, c[0].alignmentOffset(0, 4096));
        assertEquals(4097, c[1].capacity());
        assertEquals(true, c[1].isDirect());
        m.free();
    }

    @Test
    void chunkSizeOutOfRange_rejected() {
        assertThrows(IllegalArgumentException.class, () -> new OffHeapBacking(0));
        assertThrows(IllegalArgumentException.class, () -> new OffHeapBacking(Allocator.MAX_CHUNK + 1));
    }

    /**
     * A chunk of 2 MiB and more is mapped in transparent huge pages from its first reuse on (the
     * kernel has them in {@code madvise} mode here): its small pages go back on the way into the
     * pool, and what was written before is not visible to a zeroed allocation after.
     */
    @Test
    void largeChunk_reusedFromThePool_isInHugePages_andZeroedWhenAsked() throws IOException {
        assumeTrue(HugePages.available() && thpAdvisable(), "no transparent huge pages to advise here");
        int size = (12 << 20) + 4097; // not a multiple of a page, nor of a huge page
        OffHeapBacking backing = new OffHeapBacking(16 << 20, 64 << 20);
        BlobBacking.Memory first = backing.allocateForOverwrite(size);
        touch(first.chunks()[0], (byte) 7);
        first.free(); // into the pool
        long before = anonHugeBytes();
        BlobBacking.Memory reused = backing.allocateForOverwrite(size);
        assertEquals(0, backing.pooledBytes(), "the reused chunk came from the pool");
        touch(reused.chunks()[0], (byte) 9);
        long grown = anonHugeBytes() - before;
        assertTrue(grown >= 8 << 20, "huge pages grew by " + grown + " bytes for a reused chunk of " + size);
        reused.free();
        BlobBacking.Memory zeroed = backing.allocate(size);
        try {
            ByteBuffer c = zeroed.chunks()[0];
            assertEquals(-1, c.duplicate().clear().mismatch(ByteBuffer.allocateDirect(size)), "not all zeros");
        } finally {
            zeroed.free();
            backing.releasePooled(Long.MAX_VALUE);
        }
    }

    /** Writes {@code b} into every page of {@code c}. */
    private static void touch(ByteBuffer c, byte b) {
        for (int i = 0; i < c.capacity(); i += 4096) {
            c.put(i, b);
        }
    }

    /** Whether the kernel maps advised memory in transparent huge pages ({@code [always]} or {@code [madvise]}). */
    private static boolean thpAdvisable() throws IOException {
        Path p = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
        return Files.exists(p) && !Files.readString(p).contains("[never]");
    }

    /** This process's anonymous memory in transparent huge pages, in bytes. */
    private static long anonHugeBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps_rollup"))) {
            if (line.startsWith("AnonHugePages:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no AnonHugePages in /proc/self/smaps_rollup");
    }
}
