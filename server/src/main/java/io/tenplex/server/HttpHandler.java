package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives one connection: one exchange at a time (pipelined requests wait in a queue until the
 * response before them is written), the body streamed into the call piece by piece, failures turned
 * into a response while the rest of the body is read and dropped, so that bad input never costs the
 * connection. The one exception is a refused {@code Expect: 100-continue} request: the client will
 * not send its body, so the answer closes the connection.
 */
final class HttpHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(HttpHandler.class);
    private static final int LINGER_SECONDS = 2;

    private final RestContext rc;
    private final Router router;
    private final Deadlines deadlines;
    private final ArrayDeque<Object> queued = new ArrayDeque<>();
    private Exchange ex;
    private Call call;
    private Throwable failure;
    private boolean requestDone;
    private boolean discardUntilNextRequest;
    private boolean closing;
    /** Body bytes of a request with a Content-Length (and no Transfer-Encoding) not yet received; else -1. */
    private long bodyLeft = -1;

    /** @param deadlines the connection's read deadlines (earlier in the same pipeline), told each phase */
    HttpHandler(RestContext rc, Router router, Deadlines deadlines) {
        this.rc = rc;
        this.router = router;
        this.deadlines = deadlines;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (closing) {
            ReferenceCountUtil.release(msg); // input after the last answer
            return;
        }
        if (ex != null && requestDone) {
            queued.add(msg); // an earlier response is still being written
            return;
        }
        handle(ctx, msg);
    }

    private void handle(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof HttpRequest req) {
                begin(ctx, req);
            }
            if (msg instanceof HttpContent c && ex != null && !discardUntilNextRequest) {
                body(c);
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void begin(ChannelHandlerContext ctx, HttpRequest req) {
        discardUntilNextRequest = false;
        bodyLeft = -1;
        ex = new Exchange(ctx, req, rc, this::responseDone);
        call = null;
        failure = null;
        requestDone = false;
        deadlines.enter(Deadlines.Phase.BODY);
        if (req.decoderResult().isFailure()) {
            // the decoder drops the rest of the connection's bytes: answer now and close
            ex.closeAfter = true;
            ex.route = Router.MALFORMED;
            failure = RequestHeads.malformed(req.decoderResult().cause());
            finishRequest();
            discardUntilNextRequest = true;
            return;
        }
        try {
            bodyLeft = declaredBody(req);
            Route route = router.find(ex.query.path());
            ex.jsonErrors = route != null && route.hasJsonErrors();
            ex.route = route == null ? Router.UNKNOWN : route.label;
            RequestHeads.checkFraming(ex);
            RequestHeads.checkHost(ex);
            RequestHeads.checkOrigin(ex);
            if (route == null || !route.isOpen()) {
                authorize(req);
            }
            call = Router.call(ex, route);
            call.head(ex);
        } catch (Throwable t) {
            fail(t);
        }
        if (HttpUtil.is100ContinueExpected(req)) {
            if (failure != null) {
                ex.closeAfter = true;
                finishRequest();
                discardUntilNextRequest = true;
                return;
            }
            ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE));
        }
    }

    /** The body length of a request framed by Content-Length alone (as the decoder read it); else -1. */
    private static long declaredBody(HttpRequest req) {
        if (req.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)) {
            return -1;
        }
        try {
            return HttpUtil.getContentLength(req, -1L);
        } catch (NumberFormatException e) {
            return -1; // the decoder refuses such a request; nothing lands
        }
    }

    private void authorize(HttpRequest req) {
        if (rc.token() == null) {
            return;
        }
        String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        // the scheme name is case-insensitive (RFC 7235): "bearer", "BEARER" and "Bearer" are one
        byte[] given = auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)
                ? auth.substring(7).trim().getBytes(StandardCharsets.UTF_8) : new byte[0];
        if (!MessageDigest.isEqual(given, rc.token())) {
            LOG.info("unauthorized request route={} from={}: {} token", ex.route, ex.ctx.channel().remoteAddress(), auth == null ? "no" : "a wrong");
            throw new HttpError(HttpResponseStatus.UNAUTHORIZED,
                    auth == null ? "missing Authorization: Bearer <token>" : "invalid bearer token");
        }
    }

    private void body(HttpContent c) {
        if (c.decoderResult().isFailure()) {
            // a malformed body (chunk sizes, line ends, extensions): nothing of it is stored
            ex.closeAfter = true;
            fail(HttpError.badRequest("malformed request body: " + RequestHeads.describe(c.decoderResult().cause())));
            finishRequest();
            discardUntilNextRequest = true;
            return;
        }
        if (bodyLeft > 0) {
            bodyLeft -= c.content().readableBytes();
        }
        if (failure == null && call != null) {
            try {
                ex.rc.metrics().received(c.content().readableBytes());
                if (c.content().unwrap() instanceof Landing) {
                    ex.rc.metrics().landed(c.content().readableBytes());
                }
                call.content(c.content());
            } catch (Throwable t) {
                fail(t);
            }
        }
        if (c instanceof LastHttpContent) {
            finishRequest();
        }
    }

    /**
     * The buffer the connection's next socket read should fill ({@link LandingAllocator}): the
     * current upload's own memory while its body of known length streams in, else null. Asked on
     * the event loop, between the reads whose bytes this handler consumes.
     */
    ByteBuf landing() {
        if (ex == null || call == null || requestDone || failure != null || discardUntilNextRequest || closing
                || bodyLeft <= 0 || !queued.isEmpty()) {
            return null;
        }
        try {
            return call.landing(bodyLeft);
        } catch (Throwable t) {
            fail(t); // answered when the body ends, like any failure of the body
            return null;
        }
    }

    private void fail(Throwable t) {
        failure = t;
        if (call != null) {
            call.abort();
        }
    }

    private void finishRequest() {
        requestDone = true;
        deadlines.enter(Deadlines.Phase.ANSWER);
        ex.ctx.channel().config().setAutoRead(false);
        if (failure == null) {
            try {
                call.end(ex);
                return;
            } catch (Throwable t) {
                fail(t);
            }
        }
        if (!ex.responded()) {
            ex.respondError(failure);
        } else {
            LOG.warn("route={} failed after its response began: {}", ex.route, failure.toString());
        }
    }

    private void responseDone(Exchange done) {
        ChannelHandlerContext ctx = done.ctx;
        rc.metrics().record(done);
        if (done.closeAfter) {
            drop();
            lingeringClose(ctx);
            return;
        }
        if (!ctx.executor().inEventLoop()) {
            ctx.executor().execute(() -> responseDone(done));
            return;
        }
        if (ex == done) {
            ex = null;
            call = null;
        }
        while (!queued.isEmpty() && (ex == null || !requestDone)) {
            handle(ctx, queued.poll());
        }
        if (ex == null) {
            deadlines.enter(Deadlines.Phase.AWAIT);
        }
        if (ex == null || !requestDone) {
            ctx.channel().config().setAutoRead(true);
            ctx.read();
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt == Deadlines.BODY_STALLED && ex != null && !requestDone) {
            ex.closeAfter = true;
            fail(new HttpError(HttpResponseStatus.REQUEST_TIMEOUT, "request body stalled: nothing received for "
                    + rc.limits().body().toSeconds() + " s (the upload was abandoned)"));
            finishRequest();
            discardUntilNextRequest = true;
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    /**
     * Closes after the answer without losing it: the output is shut down (the client reads the
     * answer, then the end), and what the client still sends is read and dropped until it closes or
     * a few seconds pass. Closing with unread input would reset the connection, and a reset can
     * discard the answer before the client reads it.
     */
    private void lingeringClose(ChannelHandlerContext ctx) {
        Channel ch = ctx.channel();
        if (closing || !(ch instanceof DuplexChannel d) || !ch.isActive()) {
            ch.close();
            return;
        }
        closing = true;
        d.shutdownOutput();
        ch.config().setAutoRead(true);
        ctx.executor().schedule(() -> ch.close(), LINGER_SECONDS, TimeUnit.SECONDS);
    }

    private void drop() {
        while (!queued.isEmpty()) {
            ReferenceCountUtil.release(queued.poll());
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (call != null && (ex == null || !ex.responded())) {
            call.abort();
        }
        drop();
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug("connection error, closing: {}", cause.toString());
        if (call != null) {
            call.abort();
        }
        ctx.close();
    }
}
