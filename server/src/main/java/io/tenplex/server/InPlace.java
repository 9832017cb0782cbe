package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;

/**
 * Puts body bytes into a {@link BlobWriter}: socket reads land in the writer's unfilled memory
 * ({@link #landing}), and a piece of the body is accepted where it arrived when that is the
 * writer's next byte, else copied. Either way each byte is checksummed once, in cache. One landing
 * at a time; not thread-safe (the connection's event loop).
 */
final class InPlace {
    /**
     * Most bytes one socket read lands in a blob: few reads (each costs a wake-up and a pass through
     * the pipeline), and a read's bytes are checksummed while still in the last-level cache.
     */
    static final int MAX_LANDING = 4 << 20;

    private Landing landed;
    private BlobWriter landedFor;

    /**
     * The buffer the next socket read should fill: {@code w}'s unfilled memory, at most
     * {@code onWire} bytes (the next bytes on the wire, all of which belong to {@code w}), or null
     * when a landing handed out earlier is still held by a decoder (its bytes not yet consumed).
     */
    ByteBuf landing(BlobWriter w, long onWire) {
        if (onWire <= 0 || landed != null && landed.refCnt() > 0) {
            return null;
        }
        ByteBuffer free = w.unfilled((int) Math.min(onWire, MAX_LANDING));
        if (!free.hasRemaining()) {
            return null;
        }
        landed = new Landing(w.peek(), w.written(), free);
        landedFor = w;
        return landed;
    }

    /** Appends {@code data}'s readable bytes to {@code w}: accepted in place when they landed there, else copied. */
    void add(BlobWriter w, ByteBuf data) {
        int n = data.readableBytes();
        if (landed != null && landedFor == w && landed.blobOffsetOf(data) == w.written()) {
            w.appendInPlace(n); // read by the socket straight into its place
        } else if (data.nioBufferCount() == 1) {
            w.append(data.internalNioBuffer(data.readerIndex(), n));
        } else {
            for (ByteBuffer b : data.nioBuffers()) {
                w.append(b);
            }
        }
    }

    /** Gives the last landing's blob reference back if all its bytes were consumed (see {@link Landing#detach}). */
    void detach() {
        if (landed != null) {
            landed.detach();
            landed = null;
            landedFor = null;
        }
    }
}
