package io.tenplex.store;

import java.util.Locale;

/**
 * A store operation refused with a reason; the store is unchanged.
 *
 * <p>Two kinds tell callers what happened without reading the message: {@link #kind()} is the general
 * kind, which decides the HTTP status at the edge (one of the first nine {@link Kind}s), and
 * {@link #detail()} is the precise one ({@link Kind#EXISTS}, {@link Kind#NOT_A_DIRECTORY}, ...), or the
 * general kind itself when there is nothing more precise to say. {@link #code()} is the detail's
 * machine-readable name, sent in REST answers and mapped to an errno by FUSE.
 */
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
        GATEWAY_TIMEOUT,
        /** The name is taken (and replacing was not asked for, or is not allowed). */
        EXISTS(CONFLICT),
        /** A path component, or the target, is a file or tensor where a directory is needed. */
        NOT_A_DIRECTORY(CONFLICT),
        /** The target is a directory where a file or tensor is needed. */
        IS_A_DIRECTORY(CONFLICT),
        /** A directory has entries and the operation needs it empty. */
        NOT_EMPTY(CONFLICT),
        /** The entry is of another type than asked for (a tensor where a file was asked for, a sidecar...). */
        WRONG_TYPE(CONFLICT);

        private final Kind general;

        Kind() {
            this.general = null;
        }

        Kind(Kind general) {
            this.general = general;
        }

        /** The general kind of this one: itself for the first nine, CONFLICT by default for the precise ones. */
        public Kind general() {
            return general == null ? this : general;
        }

        /** True for the general kinds (those that decide a status by themselves). */
        public boolean isGeneral() {
            return general == null;
        }

        /** The lower-case code, e.g. {@code not_found}, {@code not_a_directory}. */
        public String code() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Kind kind;
    private final Kind detail;

    /** A refusal of {@code kind}: a precise kind brings its default general kind (see {@link Kind#general()}). */
    public StoreException(Kind kind, String message) {
        this(kind.general(), kind, message);
    }

    /**
     * A refusal with a precise {@code detail} under a chosen general {@code kind}, e.g. a tensor where
     * a file was asked for: {@code new StoreException(NOT_FOUND, WRONG_TYPE, ...)}.
     */
    public StoreException(Kind kind, Kind detail, String message) {
        super(message);
        if (!kind.isGeneral()) {
            throw new IllegalArgumentException(kind + " is not a general kind");
        }
        this.kind = kind;
        this.detail = detail;
    }

    /** The general kind (one of the first nine), which decides the HTTP status. */
    public Kind kind() {
        return kind;
    }

    /** The precise kind: one of the precise kinds, or {@link #kind()} itself. */
    public Kind detail() {
        return detail;
    }

    /** The detail's lower-case code. */
    public String code() {
        return detail.code();
    }

    /** True when {@code k} is this refusal's general or precise kind. */
    public boolean is(Kind k) {
        return kind == k || detail == k;
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

    /** The name is taken (409). */
    public static StoreException exists(String m) {
        return new StoreException(Kind.EXISTS, m);
    }

    /** A file or tensor where a directory is needed (409). */
    public static StoreException notADirectory(String m) {
        return new StoreException(Kind.NOT_A_DIRECTORY, m);
    }

    /** A directory where a file or tensor is needed (409). */
    public static StoreException isADirectory(String m) {
        return new StoreException(Kind.IS_A_DIRECTORY, m);
    }

    /** A directory that has entries (409). */
    public static StoreException notEmpty(String m) {
        return new StoreException(Kind.NOT_EMPTY, m);
    }

    /** An entry of another type than asked for, answered as {@code general} (e.g. NOT_FOUND or CONFLICT). */
    public static StoreException wrongType(Kind general, String m) {
        return new StoreException(general, Kind.WRONG_TYPE, m);
    }
}
