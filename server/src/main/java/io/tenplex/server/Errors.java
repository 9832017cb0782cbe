package io.tenplex.server;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.OutOfBudgetException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one place where failures become HTTP statuses and one-line reasons. */
final class Errors {
    private static final Logger LOG = LoggerFactory.getLogger(Errors.class);

    private Errors() {
    }

    static HttpResponseStatus status(Throwable t) {
        if (t instanceof HttpError h) {
            return h.status();
        }
        if (t instanceof StoreException s) {
            return switch (s.kind()) {
                case BAD_REQUEST -> HttpResponseStatus.BAD_REQUEST;
                case NOT_FOUND -> HttpResponseStatus.NOT_FOUND;
                case CONFLICT -> HttpResponseStatus.CONFLICT;
                case TOO_LARGE -> HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE;
                case INSUFFICIENT_STORAGE -> HttpResponseStatus.INSUFFICIENT_STORAGE;
                case FORBIDDEN -> HttpResponseStatus.FORBIDDEN;
                case UNAVAILABLE -> HttpResponseStatus.SERVICE_UNAVAILABLE;
                case BAD_GATEWAY -> HttpResponseStatus.BAD_GATEWAY;
                case GATEWAY_TIMEOUT -> HttpResponseStatus.GATEWAY_TIMEOUT;
            };
        }
        if (t instanceof OutOfBudgetException o) {
            return o.everFits() ? HttpResponseStatus.INSUFFICIENT_STORAGE : HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE;
        }
        if (t instanceof IllegalArgumentException) {
            return HttpResponseStatus.BAD_REQUEST;
        }
        return HttpResponseStatus.INTERNAL_SERVER_ERROR;
    }

    /** A single line: the message with line breaks flattened. */
    static String reason(Throwable t, String route) {
        if (status(t) == HttpResponseStatus.INTERNAL_SERVER_ERROR) {
            LOG.error("route={} internal error", route, t);
            return "internal error: " + t;
        }
        String m = t.getMessage() == null ? t.toString() : t.getMessage();
        return m.replace('\n', ' ').replace('\r', ' ');
    }
}
