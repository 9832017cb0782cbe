package io.tenplex.server;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.util.List;
import java.util.Locale;

/**
 * Checks of a request head before any route sees it: how the decoder's refusals are answered, the
 * body framing we accept, and which browser origins may call us. Framing errors close the
 * connection, since the rest of its bytes cannot be trusted.
 */
final class RequestHeads {
    private static final int MAX_REASON = 120;

    private RequestHeads() {
    }

    /** The answer to a head the decoder refused: 431 for oversized headers, 414 for a long line, else 400. */
    static HttpError malformed(Throwable cause) {
        if (cause instanceof TooLongHttpHeaderException) {
            return new HttpError(HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request headers too large: "
                    + describe(cause));
        }
        if (cause instanceof TooLongHttpLineException) {
            return new HttpError(HttpResponseStatus.REQUEST_URI_TOO_LONG, "request line too long: " + describe(cause));
        }
        return HttpError.badRequest("malformed HTTP request: " + describe(cause));
    }

    /** A decoder's message, one short printable line (it may quote what the client sent). */
    static String describe(Throwable cause) {
        String m = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        StringBuilder b = new StringBuilder(Math.min(m.length(), MAX_REASON));
        for (int i = 0; i < m.length() && b.length() < MAX_REASON; i++) {
            char c = m.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return m.length() > MAX_REASON ? b + "..." : b.toString();
    }

    /**
     * Only {@code Transfer-Encoding: chunked} (alone) frames a body; any other coding (gzip, a list,
     * an unknown name) is refused, because we would store the coded bytes as if they were the data.
     */
    static void checkFraming(Exchange ex) {
        List<String> te = ex.request.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING);
        if (te.isEmpty()) {
            return;
        }
        if (te.size() != 1 || !te.get(0).trim().equalsIgnoreCase("chunked")) {
            ex.closeAfter = true;
            throw new HttpError(HttpResponseStatus.BAD_REQUEST, "unsupported Transfer-Encoding '"
                    + describe(new IllegalArgumentException(String.join(", ", te))) + "': only 'chunked' is accepted");
        }
    }

    /** An HTTP/1.1 request names exactly one {@code Host} (RFC 9112 3.2); HTTP/1.0 may name none. */
    static void checkHost(Exchange ex) {
        int hosts = ex.request.headers().getAll(HttpHeaderNames.HOST).size();
        boolean http11 = ex.request.protocolVersion().minorVersion() >= 1;
        if (hosts > 1 || (hosts == 0 && http11)) {
            throw HttpError.badRequest(hosts == 0 ? "an HTTP/1.1 request needs a Host header"
                    : "a request must name one Host, not " + hosts);
        }
    }

    /**
     * A request a browser sends on behalf of a page carries {@code Origin}; only the origins the
     * operator allows may call the daemon, so a web page cannot change its state.
     */
    static void checkOrigin(Exchange ex) {
        String origin = ex.header(HttpHeaderNames.ORIGIN);
        if (origin != null && !ex.rc.limits().allowedOrigins().contains(origin.trim().toLowerCase(Locale.ROOT))) {
            throw new HttpError(HttpResponseStatus.FORBIDDEN, "cross-origin requests are refused (origin "
                    + describe(new IllegalArgumentException(origin)) + " is not allowed; see --allow-origin)");
        }
    }
}
