package io.tenplex.client;

/**
 * A request the daemon refused or could not serve: its status (0 when it could not be reached), the
 * daemon's error code ({@code X-Tenplex-Error-Code}, e.g. {@code not_found}, {@code wrong_type}; null
 * when it sent none) and the reason.
 */
public class TenplexException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String code;

    public TenplexException(int status, String message) {
        this(status, null, message);
    }

    public TenplexException(int status, String code, String message) {
        super(message);
        this.status = status;
        this.code = code;
    }

    public int status() {
        return status;
    }

    /** The daemon's error code, or null. */
    public String code() {
        return code;
    }
}
