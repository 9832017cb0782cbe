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

    /**
     * What a load of {@code rank} of {@code job} that found nothing says: the daemon's reason, which
     * names the rank and job already, else the reason after a line that names them.
     */
    public static String message(int rank, String job, String reason) {
        String head = "nothing to load for rank " + rank + " of job " + job;
        if (reason != null && reason.contains("rank " + rank) && reason.contains("job " + job)) {
            return reason;
        }
        return reason == null || reason.isBlank() ? head : head + ": " + reason;
    }
}
