package io.tenplex.store.rest;

import io.netty.handler.codec.http.HttpResponseStatus;

/** A refusal with a specific HTTP status and a one-line reason. */
final class HttpError extends RuntimeException {
    private final HttpResponseStatus status;

    HttpError(HttpResponseStatus status, String reason) {
        super(reason, null, false, false);
        this.status = status;
    }

    HttpResponseStatus status() {
        return status;
    }

    static HttpError badRequest(String reason) {
        return new HttpError(HttpResponseStatus.BAD_REQUEST, reason);
    }

    static HttpError methodNotAllowed(String method, String route) {
        return new HttpError(HttpResponseStatus.METHOD_NOT_ALLOWED, "method " + method + " not allowed on " + route);
    }
}
