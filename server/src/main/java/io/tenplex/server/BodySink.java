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
 */
final class BodySink implements AutoCloseable {
    private final Allocator allocator;
    private final int block;
    private BlobWriter writer;
    private GrowingBuffer growing;

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
        if (writer != null && data.readableBytes() > writer.size() - writer.written()) {
            throw HttpError.badRequest("body is longer than the expected " + writer.size() + " bytes");
        }
        for (ByteBuffer b : data.nioBuffers()) {
            if (writer != null) {
                writer.append(b);
            } else {
                growing.append(b);
            }
        }
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

    @Override
    public void close() {
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
