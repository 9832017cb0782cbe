package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
     * A fresh chunk of 2 MiB and more is advised for transparent huge pages (its mapping carries
     * the kernel's {@code hg} flag), and the advice changes none of its bytes: it reads as zeros.
     */
    @Test
    void freshLargeChunk_isAdvisedForHugePages_andReadsZeros() throws IOException {
        assumeTrue(HugePages.available() && Files.exists(Path.of("/proc/self/smaps")), "no madvise here");
        int size = (12 << 20) + 4097; // not a multiple of a page, nor of a huge page
        BlobBacking.Memory m = new OffHeapBacking(16 << 20).allocate(size);
        try {
            ByteBuffer c = m.chunks()[0];
            long middle = jnr.ffi.Runtime.getSystemRuntime().getMemoryManager().newPointer(c).address() + size / 2;
            String flags = vmFlags(middle);
            assertTrue((" " + flags + " ").contains(" hg "), "VmFlags of the chunk's memory: " + flags);
            assertEquals(-1, c.duplicate().clear().mismatch(ByteBuffer.allocateDirect(size)), "not all zeros");
        } finally {
            m.free();
        }
    }

    @Test
    void smallChunk_isNotAdvised() throws IOException {
        assumeTrue(HugePages.available() && Files.exists(Path.of("/proc/self/smaps")), "no madvise here");
        ByteBuffer c = ByteBuffer.allocateDirect(HugePages.SIZE - 1);
        assertEquals(0, HugePages.advise(c));
        assertEquals(0, HugePages.advise(ByteBuffer.allocate(8 << 20)), "a heap buffer is never advised");
    }

    /** The {@code VmFlags} of the mapping of this process that holds {@code address}. */
    private static String vmFlags(long address) throws IOException {
        List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        boolean inside = false;
        for (String line : lines) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
                long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long end = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = start <= address && address < end;
            } else if (inside && line.startsWith("VmFlags:")) {
                return line.substring("VmFlags:".length()).trim();
            }
        }
        throw new IllegalStateException("no mapping holds address " + Long.toHexString(address));
    }
}
