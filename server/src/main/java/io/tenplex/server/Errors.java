package io.tenplex.server;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.tenplex.store.StoreException;
import io.tenplex.store.memory.OutOfBudgetException;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The one place where failures become HTTP statuses, error codes and one-line reasons. */
final class Errors {
    /** The header that carries an error answer's code (see docs/API.md, "Error codes"). */
    static final String CODE_HEADER = "X-Tenplex-Error-Code";

    private static final Logger LOG = LoggerFactory.getLogger(Errors.class);

    private Errors() {
    }

    static HttpResponseStatus status(Throwable t) {
        if (t instanceof HttpError h) {
            return h.status();
        }
        if (t instanceof StoreException s) {
            return status(s.kind());
        }
        if (t instanceof OutOfBudgetException o) {
            return o.everFits() ? HttpResponseStatus.INSUFFICIENT_STORAGE : HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE;
        }
        if (t instanceof IllegalArgumentException) {
            return HttpResponseStatus.BAD_REQUEST;
        }
        return HttpResponseStatus.INTERNAL_SERVER_ERROR;
    }

    private static HttpResponseStatus status(StoreException.Kind general) {
        return switch (general) {
            case BAD_REQUEST -> HttpResponseStatus.BAD_REQUEST;
            case NOT_FOUND -> HttpResponseStatus.NOT_FOUND;
            case CONFLICT, EXISTS, NOT_A_DIRECTORY, IS_A_DIRECTORY, NOT_EMPTY, WRONG_TYPE -> HttpResponseStatus.CONFLICT;
            case TOO_LARGE -> HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE;
            case INSUFFICIENT_STORAGE -> HttpResponseStatus.INSUFFICIENT_STORAGE;
            case FORBIDDEN -> HttpResponseStatus.FORBIDDEN;
            case UNAVAILABLE -> HttpResponseStatus.SERVICE_UNAVAILABLE;
            case BAD_GATEWAY -> HttpResponseStatus.BAD_GATEWAY;
            case GATEWAY_TIMEOUT -> HttpResponseStatus.GATEWAY_TIMEOUT;
        };
    }

    /** The machine-readable code of a failure: the store's precise kind, or one named by the status. */
    static String code(Throwable t) {
        if (t instanceof StoreException s) {
            return s.code();
        }
        if (t instanceof HttpError h && h.code() != null) {
            return h.code();
        }
        return code(status(t));
    }

    /** The code of an error status: the store's kind names where one fits, else the reason phrase in snake case. */
    static String code(HttpResponseStatus st) {
        return switch (st.code()) {
            case 400 -> "bad_request";
            case 403 -> "forbidden";
            case 404 -> "not_found";
            case 409 -> "conflict";
            case 413 -> "too_large";
            case 500 -> "internal";
            case 502 -> "bad_gateway";
            case 503 -> "unavailable";
            case 504 -> "gateway_timeout";
            case 507 -> "insufficient_storage";
            default -> st.reasonPhrase().trim().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "_");
        };
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
