package io.tenplex.client;

/** A request the daemon refused or could not serve: its status (0 when it could not be reached) and reason. */
public final class TenplexException extends RuntimeException {
    private final int status;

    public TenplexException(int status, String message) {
        super(message);
        this.status = status;
    }

    public int status() {
        return status;
    }
}
