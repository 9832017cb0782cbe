package io.tenplex.jobs.common;

import java.io.IOException;

/**
 * Another daemon answered a call with an error. Its {@link Kind} says what went wrong (read from the
 * answer's error code, never from its text); the message is the status and the daemon's reason.
 */
public final class DaemonCallException extends IOException {
    /** What kind of refusal it was. */
    public enum Kind {
        /** There is no such part, reconfiguration or path. */
        NOT_FOUND,
        /** The request conflicts with the state there (e.g. aborting a committed part). */
        CONFLICT,
        /** Any other error answer. */
        OTHER
    }

    private final Kind kind;
    private final int status;
    private final String reason;

    public DaemonCallException(Kind kind, int status, String reason) {
        super(status + " " + reason.strip());
        this.kind = kind;
        this.status = status;
        this.reason = reason.strip();
    }

    /** The daemon's reason, as it answered. */
    public String reason() {
        return reason;
    }

    public Kind kind() {
        return kind;
    }

    /** The answer's status (an HTTP status code for the HTTP client). */
    public int status() {
        return status;
    }
}
