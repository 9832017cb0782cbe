package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
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
}
