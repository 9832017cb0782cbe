package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.GrowingBuffer;
import java.nio.ByteBuffer;

/**
 * Streams a request body into off-heap memory: straight into an exactly-sized blob when the length
 * is known up front (Content-Length or dtype×dims), into growing segments otherwise. Nothing is
 * aggregated on the heap. Close frees whatever was not taken.
 *
 * <p>Into an exactly-sized blob, the socket can read the body in place: {@link #landing} hands out
 * the blob's unfilled memory as the next receive buffer, and {@link #add} accepts bytes that arrive
 * where they belong by checksumming them, without a copy. Bytes that arrive anywhere else (the
 * first read, which also holds the request head) are copied.
 */
final class BodySink implements AutoCloseable {
    private final Allocator allocator;
    private final int block;
    private BlobWriter writer;
    private GrowingBuffer growing;
    private final InPlace inPlace = new InPlace();

    /** @param expected exact body size, or -1 when unknown */
    BodySink(Allocator allocator, long expected, int block) {
        this.allocator = allocator;
        this.block = block;
        if (expected >= 0) {
            writer = BlobWriter.allocate(allocator, expected, block);
        } else {
            growing = new GrowingBuffer(allocator);
        }
    }

    void add(ByteBuf data) {
        if (!data.isReadable()) {
            return;
        }
        int n = data.readableBytes();
        if (writer != null && n > writer.size() - writer.written()) {
            throw HttpError.badRequest("body is longer than the expected " + writer.size() + " bytes");
        }
        if (writer != null) {
            inPlace.add(writer, data);
            return;
        }
        if (data.nioBufferCount() == 1) {
            growing.append(data.internalNioBuffer(data.readerIndex(), n));
            return;
        }
        for (ByteBuffer b : data.nioBuffers()) {
            growing.append(b);
        }
    }

    /**
     * The buffer the next socket read should fill: the blob's unfilled memory, at most
     * {@code onWire} bytes (the body's bytes not yet received, which all belong to this sink), or
     * null when the body goes through the usual receive buffers (unknown length, or a landing
     * buffer handed out earlier is still held by a decoder).
     */
    ByteBuf landing(long onWire) {
        return writer == null ? null : inPlace.landing(writer, onWire);
    }

    long received() {
        return writer != null ? writer.written() : growing.size();
    }

    /**
     * The complete body; the caller owns the writer.
     *
     * @param what names the body in the error, e.g. "tensor f32[3, 4]"
     */
    BlobWriter finish(String what) {
        detachLanding();
        if (writer != null) {
            if (!writer.isComplete()) {
                throw HttpError.badRequest("body has " + writer.written() + " bytes but " + what + " needs "
                        + writer.size());
            }
            BlobWriter w = writer;
            writer = null;
            return w;
        }
        BlobWriter w = growing.toWriter(block);
        growing.close();
        growing = null;
        return w;
    }

    Allocator allocator() {
        return allocator;
    }

    private void detachLanding() {
        inPlace.detach();
    }

    @Override
    public void close() {
        detachLanding();
        if (writer != null) {
            writer.close();
            writer = null;
        }
        if (growing != null) {
            growing.close();
            growing = null;
        }
    }
}
