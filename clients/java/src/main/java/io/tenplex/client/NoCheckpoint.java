package io.tenplex.client;

/**
 * There is nothing to load (a first start): the daemon has no checkpoint for this job and rank, or
 * nothing below the prefix asked for. As the Python client's {@code tenplex.NoCheckpoint}; status 404,
 * the daemon's error code (usually {@code not_found}) and its reason in the message.
 */
public final class NoCheckpoint extends TenplexException {
    private static final long serialVersionUID = 1L;

    public NoCheckpoint(String code, String message) {
        super(404, code, message);
    }
}
