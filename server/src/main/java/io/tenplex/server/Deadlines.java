package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The read deadlines of one connection, placed before the HTTP codec so that it sees raw bytes.
 * {@link HttpHandler} tells it which phase the connection is in; each phase has its own deadline:
 * <ul>
 *   <li>{@link Phase#AWAIT}: nothing of the next request yet; after the idle timeout the connection
 *       closes without a word (a keep-alive connection nobody uses).</li>
 *   <li>bytes arrive in AWAIT: the head must be complete within the head timeout, else a raw 408
 *       and close (slowloris).</li>
 *   <li>{@link Phase#BODY}: the body must keep arriving; after the body timeout with nothing received
 *       the handler gets {@link #BODY_STALLED} (it answers 408, frees the upload and closes).</li>
 *   <li>{@link Phase#ANSWER}: the request is complete and its answer under way; no read deadline
 *       (write stalls are a {@code WriteTimeoutHandler}'s).</li>
 * </ul>
 * Runs on the channel's event loop only.
 */
final class Deadlines extends ChannelDuplexHandler {
    /** The phases of a connection, as the handler sees them. */
    enum Phase { AWAIT, BODY, ANSWER }

    /** The user event fired at the handler when a body stalls. */
    static final Object BODY_STALLED = new Object() {
        @Override
        public String toString() {
            return "BODY_STALLED";
        }
    };

    private static final byte[] TIMEOUT_408 = ("HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + Errors.CODE_HEADER + ": request_timeout\r\n"
            + "Content-Length: 38\r\nConnection: close\r\n\r\nrequest head not complete in time\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII);

    private final ServerLimits limits;
    private ChannelHandlerContext ctx;
    private Phase phase = Phase.AWAIT;
    private boolean headStarted;
    private long lastRead;
    private ScheduledFuture<?> timer;

    Deadlines(ServerLimits limits) {
        this.limits = limits;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        enter(Phase.AWAIT);
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof ByteBuf b && b.isReadable()) {
            lastRead = System.nanoTime();
            if (phase == Phase.AWAIT && !headStarted) {
                headStarted = true;
                schedule(limits.head().toNanos(), this::headTimedOut);
            }
        }
        super.channelRead(ctx, msg);
    }

    /** Called by the handler when the connection moves to {@code next}. */
    void enter(Phase next) {
        phase = next;
        headStarted = false;
        lastRead = System.nanoTime();
        switch (next) {
            case AWAIT -> schedule(limits.idle().toNanos(), this::idleTimedOut);
            case BODY -> schedule(limits.body().toNanos(), this::bodyCheck);
            case ANSWER -> cancel();
        }
    }

    private void idleTimedOut() {
        if (phase == Phase.AWAIT && !headStarted) {
            ctx.close();
        }
    }

    private void headTimedOut() {
        if (phase == Phase.AWAIT && headStarted) {
            phase = Phase.ANSWER;
            ctx.writeAndFlush(Unpooled.wrappedBuffer(TIMEOUT_408)).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void bodyCheck() {
        if (phase != Phase.BODY) {
            return;
        }
        long quiet = System.nanoTime() - lastRead;
        long limit = limits.body().toNanos();
        if (quiet < limit) {
            schedule(limit - quiet, this::bodyCheck); // bytes came meanwhile: wait from the last of them
            return;
        }
        phase = Phase.ANSWER;
        cancel();
        ctx.fireUserEventTriggered(BODY_STALLED);
    }

    private void schedule(long nanos, Runnable task) {
        cancel();
        timer = ctx.executor().schedule(task, nanos, TimeUnit.NANOSECONDS);
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        cancel();
        super.channelInactive(ctx);
    }
}
