package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Collects a control request's body, runs its handler, and answers on the event loop. A body is at
 * most {@link ServerLimits#controlBody()} bytes, and all bodies being collected at once at most
 * {@link ServerLimits#controlInFlight()} (beyond it: 429), so that no burst of large control
 * messages can fill the heap. A body typed as a browser form or plain text is refused (415): control
 * routes take JSON or protobuf, and those a web page cannot send without asking first.
 */
final class ControlCall extends Call {
    private static final List<String> BROWSER_TYPES = List.of("text/plain", "application/x-www-form-urlencoded",
            "multipart/form-data");

    private final ControlHandler handler;
    private ServerLimits limits;
    private AtomicLong accounted;
    private long reserved;
    private byte[] body = new byte[0];
    private int size;

    ControlCall(ControlHandler handler) {
        this.handler = handler;
    }

    @Override
    void head(Exchange ex) {
        refuseEncodedSlash(ex.query.rawPath());
        long declared = Uploads.contentLength(ex);
        limits = ex.rc.limits();
        int limit = limits.controlBody();
        if (declared > limit) {
            throw tooLarge(limit);
        }
        String type = Uploads.contentType(ex);
        if (declared != 0 && BROWSER_TYPES.stream().anyMatch(type::startsWith)) {
            throw new HttpError(HttpResponseStatus.UNSUPPORTED_MEDIA_TYPE, "control routes take application/json "
                    + "(or application/x-protobuf), not " + RequestHeads.describe(new IllegalArgumentException(type)));
        }
        accounted = ex.rc.controlBytes();
        reserve(declared > 0 ? declared : 0);
        body = new byte[(int) Math.max(0, declared)];
    }

    /**
     * Refuses a path with an encoded {@code /} ({@code %2F}): a segment of a control route (a job's
     * name, an id) never contains one, and decoded it would split the segment in two, so that
     * {@code DELETE /api/v1/jobs/a%2F} would name job {@code a}.
     */
    static void refuseEncodedSlash(String rawPath) {
        int at = rawPath.toUpperCase(java.util.Locale.ROOT).indexOf("%2F");
        if (at >= 0) {
            throw HttpError.badRequest("an encoded '/' (%2F) in the path " + RequestHeads.describe(
                    new IllegalArgumentException(rawPath)) + ": job names and the other segments of a job, dataset "
                    + "or stop route never contain '/'");
        }
    }

    private void reserve(long n) {
        if (n == 0) {
            return;
        }
        long now = accounted.addAndGet(n);
        reserved += n;
        if (now > limits.controlInFlight()) {
            throw new HttpError(HttpResponseStatus.TOO_MANY_REQUESTS, "too many control bytes in flight ("
                    + limits.controlInFlight() + " at most over all requests); retry shortly");
        }
    }

    private static HttpError tooLarge(int limit) {
        return new HttpError(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "control message over " + limit + " bytes");
    }

    @Override
    void content(ByteBuf data) {
        int n = data.readableBytes();
        if ((long) size + n > body.length) {
            if ((long) size + n > limits.controlBody()) {
                throw tooLarge(limits.controlBody());
            }
            int grown = (int) Math.min(limits.controlBody(), Math.max((long) size + n, 2L * body.length));
            reserve(grown - body.length);
            body = Arrays.copyOf(body, grown);
        }
        data.getBytes(data.readerIndex(), body, size, n);
        size += n;
    }

    @Override
    void end(Exchange ex) {
        byte[] whole = size == body.length ? body : Arrays.copyOf(body, size);
        release();
        CompletableFuture<Void> closed = new CompletableFuture<>();
        ControlHandler.Request req = new ControlHandler.Request(ex.method().name(), ex.query.path(),
                ex.query.parameters(), ex.header(HttpHeaderNames.CONTENT_TYPE), whole, closed);
        CompletableFuture<ControlHandler.Response> answer = handler.handle(req);
        ChannelFutureListener gone = answer.isDone() ? null : f -> closed.complete(null);
        if (gone != null) {
            ex.ctx.read(); // one read while the answer waits: a client that went away closes the channel
            ex.ctx.channel().closeFuture().addListener(gone);
        }
        answer.whenComplete((r, t) -> {
            if (gone != null) { // before the write: a reader that closes once it has the answer is not "gone"
                ex.ctx.channel().closeFuture().removeListener(gone);
            }
            respond(ex, r, t);
        });
    }

    private static void respond(Exchange ex, ControlHandler.Response r, Throwable t) {
        ex.ctx.executor().execute(() -> {
            if (t != null) {
                ex.respondError(t instanceof CompletionException && t.getCause() != null ? t.getCause() : t);
            } else {
                HttpResponseStatus st = HttpResponseStatus.valueOf(r.status());
                DefaultHttpHeaders h = new DefaultHttpHeaders();
                r.headers().forEach(h::set);
                if (r.status() >= 400 && !h.contains(Errors.CODE_HEADER)) {
                    h.set(Errors.CODE_HEADER, Errors.code(st));
                }
                var written = ex.respond(st, r.contentType(), r.body(), h.isEmpty() ? null : h);
                if (r.unsent() != null) {
                    written.addListener(w -> {
                        if (!w.isSuccess()) {
                            r.unsent().run();
                        }
                    });
                }
            }
        });
    }

    @Override
    void abort() {
        release();
        body = new byte[0];
    }

    private void release() {
        if (accounted != null && reserved > 0) {
            accounted.addAndGet(-reserved);
            reserved = 0;
        }
    }
}
