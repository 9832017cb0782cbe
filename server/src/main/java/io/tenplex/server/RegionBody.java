package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.stream.ChunkedInput;
import io.tenplex.store.DataRef;
import io.tenplex.store.RegionRead;
import java.nio.ByteBuffer;
import java.util.function.LongConsumer;

/**
 * A response body that streams a region of a tensor (or a whole file): long contiguous runs go out
 * as views of the store's memory (zero copy), short runs are gathered into pooled 1 MiB buffers.
 * Owns the {@link DataRef}: closing the input gives the reference back.
 */
final class RegionBody implements ChunkedInput<ByteBuf> {
    private static final int VIEW_MAX = 16 << 20;
    private static final int COPY_CHUNK = 1 << 20;

    private final DataRef ref;
    private final RegionRead region;
    private final LongConsumer served;
    private ByteBuf prefix;
    private long sent;
    private boolean closed;

    /** @param prefix bytes sent before the region (an {@code .npy} header), or null; ownership passes here */
    RegionBody(DataRef ref, RegionRead region, ByteBuf prefix, LongConsumer served) {
        this.ref = ref;
        this.region = region;
        this.prefix = prefix;
        this.served = served;
    }

    @Override
    public boolean isEndOfInput() {
        return prefix == null && region.remaining() == 0;
    }

    @Override
    public ByteBuf readChunk(ChannelHandlerContext ctx) {
        return readChunk(ctx.alloc());
    }

    @Override
    public ByteBuf readChunk(ByteBufAllocator alloc) {
        ByteBuf out;
        if (prefix != null) {
            out = prefix;
            prefix = null;
        } else if (region.remaining() == 0) {
            return null;
        } else if (region.nextIsView()) {
            out = Unpooled.wrappedBuffer(region.nextView(VIEW_MAX));
        } else {
            int size = (int) Math.min(COPY_CHUNK, region.remaining());
            out = alloc.directBuffer(size);
            try {
                ByteBuffer nio = out.nioBuffer(0, size);
                out.writerIndex(region.copy(nio));
            } catch (RuntimeException e) {
                out.release();
                throw e;
            }
        }
        sent += out.readableBytes();
        served.accept(out.readableBytes());
        return out;
    }

    @Override
    public long length() {
        return region.byteSize();
    }

    @Override
    public long progress() {
        return sent;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (prefix != null) {
                prefix.release();
                prefix = null;
            }
            ref.close();
        }
    }
}
