package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import org.junit.jupiter.api.Test;

/**
 * A landing buffer over a blob's unfilled memory keeps the blob's memory alive while any handler
 * holds it, gives it back early only once every received byte was consumed, refuses appends once
 * filled, and recognises its own bytes.
 */
class LandingTest {

    @Test
    void landing_holdsTheBlobsMemory_untilItsLastRelease() {
        try (Allocator a = new Allocator(1 << 20)) {
            BlobWriter w = BlobWriter.allocate(a, 1000, 256);
            Landing l = new Landing(w.peek(), 0, w.unfilled(600));
            assertEquals(600, l.writableBytes());
            assertEquals(0, l.readableBytes());
            w.close(); // the upload is abandoned while a read still holds the buffer
            assertEquals(1000, a.usedBytes(), "memory a socket read may still write must not be freed");
            l.release();
            assertEquals(0, a.usedBytes());
        }
    }

    @Test
    void detach_givesTheBlobBack_onlyOnceEveryReceivedByteWasConsumed() {
        try (Allocator a = new Allocator(1 << 20)) {
            BlobWriter w = BlobWriter.allocate(a, 1000, 256);
            Landing l = new Landing(w.peek(), 0, w.unfilled(1000));
            l.writerIndex(300); // a read of 300 bytes
            l.readerIndex(100); // of which a decoder consumed 100
            l.detach();
            w.close();
            assertEquals(1000, a.usedBytes(), "unconsumed bytes keep the memory");
            l.readerIndex(300);
            l.detach();
            assertEquals(0, a.usedBytes(), "nothing can reach the memory through the buffer any more");
            l.release(); // gives nothing back twice
            assertEquals(0, a.usedBytes());
        }
    }

    @Test
    void filledLanding_isReadOnly_soNoDecoderAppendsIntoTheBlob() {
        try (Allocator a = new Allocator(1 << 20); BlobWriter w = BlobWriter.allocate(a, 100, 64)) {
            Landing l = new Landing(w.peek(), 0, w.unfilled(100));
            assertFalse(l.isReadOnly(), "the socket read fills it");
            l.writerIndex(10);
            assertTrue(l.isReadOnly());
            l.release();
        }
    }

    @Test
    void discardingReadBytes_neverMovesBytesWithinTheBlob() {
        try (Allocator a = new Allocator(1 << 20); BlobWriter w = BlobWriter.allocate(a, 1000, 256)) {
            Landing l = new Landing(w.peek(), 0, w.unfilled(1000));
            for (int i = 0; i < 1000; i++) {
                l.writeByte(i);
            }
            l.readerIndex(900); // 900 bytes consumed (accepted in place), 100 still unread
            l.discardSomeReadBytes();
            l.discardReadBytes();
            assertEquals(900, l.readerIndex());
            for (int i = 0; i < 1000; i++) {
                assertEquals((byte) i, w.peek().get(i), "byte " + i);
            }
            l.release();
        }
    }

    @Test
    void blobOffsetOf_namesOnlyBytesReceivedIntoThisLanding() {
        try (Allocator a = new Allocator(1 << 20); BlobWriter w = BlobWriter.allocate(a, 5000, 1024)) {
            w.append(java.nio.ByteBuffer.allocate(1000));
            Landing l = new Landing(w.peek(), 1000, w.unfilled(4000));
            l.writerIndex(3000);
            ByteBuf slice = l.retainedSlice(500, 700);
            assertEquals(1500, l.blobOffsetOf(slice));
            slice.readerIndex(100);
            assertEquals(1600, l.blobOffsetOf(slice));
            assertEquals(-1, l.blobOffsetOf(l.slice(2900, 200).writerIndex(200)), "past the received bytes");
            ByteBuf elsewhere = Unpooled.directBuffer(16).writeZero(16);
            assertEquals(-1, l.blobOffsetOf(elsewhere));
            elsewhere.release();
            slice.release();
            l.release();
        }
    }
}
