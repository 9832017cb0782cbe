package io.tenplex.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.stream.ChunkedInput;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;

/**
 * One request and its response: parameters, headers, and the ways to answer. Exactly one response
 * is sent; when its last byte is written, {@code done} runs (the handler then reads the next request
 * or closes the connection).
 */
final class Exchange {
    final ChannelHandlerContext ctx;
    final HttpRequest request;
    final QueryStringDecoder query;
    final RestContext rc;
    final long startNanos = System.nanoTime();
    private final Consumer<Exchange> done;
    String route = Router.UNKNOWN;
    boolean closeAfter;
    /** Errors are answered as JSON (the store routes of {@code /api/v1}), else as one line of text. */
    boolean jsonErrors;
    private boolean responded;
    private HttpResponseStatus status;
    long bodyBytes;

    Exchange(ChannelHandlerContext ctx, HttpRequest request, RestContext rc, Consumer<Exchange> done) {
        this.ctx = ctx;
        this.request = request;
        this.query = new QueryStringDecoder(originForm(request.uri()));
        this.rc = rc;
        this.done = done;
    }

    /**
     * The path and query of a target: the absolute form a client may send ({@code http://host/p?q},
     * RFC 9112 3.2.2) is served as {@code /p?q}.
     */
    static String originForm(String target) {
        int scheme = target.indexOf("://");
        if (scheme < 0 || target.startsWith("/") || !target.regionMatches(true, 0, "http", 0, 4)) {
            return target;
        }
        int path = target.indexOf('/', scheme + 3);
        return path < 0 ? "/" : target.substring(path);
    }

    HttpMethod method() {
        return request.method();
    }

    /** The first value of a query parameter, or null. */
    String param(String name) {
        List<String> v = query.parameters().get(name);
        return v == null || v.isEmpty() ? null : v.get(0);
    }

    String requireParam(String name) {
        String v = param(name);
        if (v == null) {
            throw HttpError.badRequest("missing query parameter '" + name + "'");
        }
        return v;
    }

    String header(CharSequence name) {
        return request.headers().get(name);
    }

    /** A header's media type, lower case, without parameters; empty for null. */
    static String mediaType(String header) {
        if (header == null) {
            return "";
        }
        int semi = header.indexOf(';');
        return (semi < 0 ? header : header.substring(0, semi)).trim().toLowerCase(java.util.Locale.ROOT);
    }

    /** True for {@code true}/{@code 1}/{@code yes} (case-insensitive). */
    static boolean truthy(String v) {
        return v != null && (v.equalsIgnoreCase("true") || v.equals("1") || v.equalsIgnoreCase("yes"));
    }

    boolean isHead() {
        return request.method().equals(HttpMethod.HEAD);
    }

    boolean responded() {
        return responded;
    }

    HttpResponseStatus status() {
        return status;
    }

    /** Answers; the future completes when the answer is written (or failed to be). */
    ChannelFuture respond(HttpResponseStatus st, String contentType, byte[] body, HttpHeaders extra) {
        ByteBuf content = isHead() || body.length == 0 ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body);
        DefaultFullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, st, content);
        if (extra != null) {
            r.headers().set(extra);
        }
        if (contentType != null) {
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        bodyBytes = body.length;
        prepare(r);
        ChannelFuture f = ctx.writeAndFlush(r);
        finish(f);
        return f;
    }

    void respondText(HttpResponseStatus st, String text) {
        respond(st, "text/plain; charset=utf-8", text.getBytes(StandardCharsets.UTF_8), null);
    }

    void respondJson(HttpResponseStatus st, Object value) throws Exception {
        respond(st, "application/json", rc.json().writeValueAsBytes(value), null);
    }

    void respondError(Throwable t) {
        HttpResponseStatus st = Errors.status(t);
        HttpHeaders h = new DefaultHttpHeaders();
        if (st == HttpResponseStatus.UNAUTHORIZED) {
            h.set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        }
        if (t instanceof HttpError e && e.allow() != null) {
            h.set(HttpHeaderNames.ALLOW, e.allow());
        }
        String code = Errors.code(t);
        h.set(Errors.CODE_HEADER, code);
        String reason = Errors.reason(t, route);
        if (jsonErrors) {
            respond(st, "application/json", errorJson(reason, code), h);
        } else {
            respond(st, "text/plain; charset=utf-8", (reason + "\n").getBytes(StandardCharsets.UTF_8), h);
        }
    }

    /** The JSON error body of the versioned API: {@code {"error": reason, "code": code}}. */
    private byte[] errorJson(String reason, String code) {
        try {
            return rc.json().writeValueAsBytes(new ErrorBody(reason, code));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The body of an error answer under {@code /api/v1}. */
    record ErrorBody(String error, String code) {
    }

    /**
     * Streams a body of {@code length} bytes; the input is closed when the write ends (it owns the
     * store reference it reads from). For HEAD only the headers are sent and the input is closed.
     */
    void respondStream(HttpResponseStatus st, HttpHeaders headers, long length, ChunkedInput<ByteBuf> body)
            throws Exception {
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, st);
        r.headers().set(headers);
        HttpUtil.setContentLength(r, length);
        bodyBytes = isHead() ? 0 : length;
        if (isHead()) {
            body.close();
            DefaultFullHttpResponse full = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, st, Unpooled.EMPTY_BUFFER,
                    r.headers(), new DefaultHttpHeaders());
            prepare(full);
            finish(ctx.writeAndFlush(full));
            return;
        }
        prepare(r);
        ctx.write(r).addListener(f -> {
            if (!f.isSuccess()) {
                body.close();
            }
        });
        finish(ctx.writeAndFlush(new HttpChunkedInput(body)));
    }

    private void prepare(HttpResponse r) {
        if (responded) {
            throw new IllegalStateException("second response for " + request.uri());
        }
        responded = true;
        status = r.status();
        boolean keepAlive = HttpUtil.isKeepAlive(request) && !closeAfter;
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            closeAfter = true;
        } else if (request.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
    }

    private void finish(ChannelFuture f) {
        f.addListener(w -> {
            if (!w.isSuccess()) {
                closeAfter = true;
            }
            done.accept(this);
        });
    }
}
