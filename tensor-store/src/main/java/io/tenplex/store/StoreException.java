package io.tenplex.store;

/** A store operation refused with a reason; the store is unchanged. The kind maps to an HTTP status at the edge. */
public final class StoreException extends RuntimeException {
    /** Why an operation was refused. */
    public enum Kind {
        BAD_REQUEST, NOT_FOUND, CONFLICT, TOO_LARGE, INSUFFICIENT_STORAGE,
        /** Not allowed by the operator's configuration (403). */
        FORBIDDEN,
        /** Too many such requests in progress; try again later (503). */
        UNAVAILABLE,
        /** An upstream source answered wrongly or not at all (502). */
        BAD_GATEWAY,
        /** An upstream source did not answer in time (504). */
        GATEWAY_TIMEOUT
    }

    private final Kind kind;

    public StoreException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public static StoreException badRequest(String m) {
        return new StoreException(Kind.BAD_REQUEST, m);
    }

    public static StoreException notFound(String m) {
        return new StoreException(Kind.NOT_FOUND, m);
    }

    public static StoreException conflict(String m) {
        return new StoreException(Kind.CONFLICT, m);
    }
}
