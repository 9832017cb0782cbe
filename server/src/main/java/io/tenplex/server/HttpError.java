package io.tenplex.server;

import io.netty.handler.codec.http.HttpResponseStatus;

/** A refusal with a specific HTTP status and a one-line reason. */
final class HttpError extends RuntimeException {
    private final HttpResponseStatus status;
    private final String allow;
    private final String code;

    HttpError(HttpResponseStatus status, String reason) {
        this(status, reason, null, null);
    }

    /** With an error code other than the one the status names (see {@link Errors#code(HttpResponseStatus)}). */
    HttpError(HttpResponseStatus status, String code, String reason) {
        this(status, reason, null, code);
    }

    private HttpError(HttpResponseStatus status, String reason, String allow, String code) {
        super(reason, null, false, false);
        this.status = status;
        this.allow = allow;
        this.code = code;
    }

    HttpResponseStatus status() {
        return status;
    }

    /** The methods the route takes (the {@code Allow} header of a 405), or null. */
    String allow() {
        return allow;
    }

    /** The error code when it is not the one the status names, or null. */
    String code() {
        return code;
    }

    static HttpError badRequest(String reason) {
        return new HttpError(HttpResponseStatus.BAD_REQUEST, reason);
    }

    /** A 405 whose {@code Allow} header lists {@code allowed}, e.g. {@code "GET, HEAD"}. */
    static HttpError methodNotAllowed(String method, String route, String allowed) {
        return new HttpError(HttpResponseStatus.METHOD_NOT_ALLOWED, "method " + method + " not allowed on " + route
                + " (allowed: " + allowed + ")", allowed, null);
    }
}
