package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;
import java.util.function.Supplier;

/**
 * A connection's receive buffers: usually the adaptive allocator's, but while an upload of known
 * length is streaming its body, the blob's own unfilled memory ({@link Landing}), so the socket read
 * puts the body in its final place. Which one is asked of the connection's handler on every read
 * ({@link HttpHandler#landing()}), on the event loop that also consumes the bytes.
 */
final class LandingAllocator implements RecvByteBufAllocator {
    private final RecvByteBufAllocator usual;
    private final Supplier<ByteBuf> landing;

    /** @param landing the next landing buffer, or null for a usual one */
    LandingAllocator(RecvByteBufAllocator usual, Supplier<ByteBuf> landing) {
        this.usual = usual;
        this.landing = landing;
    }

    @Override
    public Handle newHandle() {
        return new LandingHandle((ExtendedHandle) usual.newHandle(), landing);
    }

    /** Delegates everything but the buffer. */
    private static final class LandingHandle extends DelegatingHandle implements ExtendedHandle {
        private final Supplier<ByteBuf> landing;

        LandingHandle(ExtendedHandle usual, Supplier<ByteBuf> landing) {
            super(usual);
            this.landing = landing;
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            ByteBuf b = landing.get();
            return b != null ? b : super.allocate(alloc);
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
        }
    }
}
