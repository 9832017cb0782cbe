package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Bytes placed in a writer's unfilled memory and accepted in place are the blob's bytes, with the
 * same block checksums as bytes appended by copy; the unfilled memory never crosses a chunk or the
 * blob's end.
 */
class BlobWriterTest {

    @Test
    void appendInPlace_givesTheSameBytesAndChecksums_asAppend() {
        byte[] data = new byte[10_007];
        new Random(1).nextBytes(data);
        try (Allocator a = new Allocator(1 << 20, 3001)) { // chunks of 3001 bytes, blocks of 1000
            BlobWriter copied = BlobWriter.allocate(a, data.length, 1000);
            copied.append(ByteBuffer.wrap(data));
            BlobWriter placed = BlobWriter.allocate(a, data.length, 1000);
            int at = 0;
            while (at < data.length) {
                ByteBuffer free = placed.unfilled(1700); // as a socket read would: up to 1700, within a chunk
                int n = free.remaining();
                free.put(data, at, n);
                placed.appendInPlace(n);
                at += n;
            }
            Blob b = placed.take();
            byte[] back = new byte[data.length];
            b.copyTo(0, data.length, ByteBuffer.wrap(back));
            assertEquals(ByteBuffer.wrap(data), ByteBuffer.wrap(back));
            BlockChecksums want = copied.checksums();
            BlockChecksums got = placed.checksums();
            assertEquals(want.blockCount(), got.blockCount());
            for (int i = 0; i < want.blockCount(); i++) {
                assertEquals(want.block(i), got.block(i), "block " + i);
            }
            b.release();
            copied.close();
        }
    }

    @Test
    void unfilled_endsAtTheChunkOrTheBlob_andTooManyBytesAreRefused() {
        try (Allocator a = new Allocator(1 << 20, 3001); BlobWriter w = BlobWriter.allocate(a, 5000, 1000)) {
            assertEquals(3001, w.unfilled(10_000).remaining(), "the first chunk");
            w.append(ByteBuffer.allocate(3000));
            assertEquals(1, w.unfilled(10_000).remaining(), "the rest of the first chunk");
            w.appendInPlace(1);
            assertEquals(1999, w.unfilled(10_000).remaining(), "the last chunk, to the blob's end");
            assertThrows(IllegalArgumentException.class, () -> w.appendInPlace(2000));
            assertEquals(3001, w.written(), "nothing accepted by a refused call");
            w.appendInPlace(1999);
            assertEquals(0, w.unfilled(10).remaining());
        }
    }
}
