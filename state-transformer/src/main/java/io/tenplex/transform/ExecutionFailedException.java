package io.tenplex.transform;

/** A plan could not be executed (every replica of some piece failed); nothing was completed for it. */
public final class ExecutionFailedException extends Exception {
    private final transient ExecutionReport report;

    public ExecutionFailedException(String message, Throwable cause) {
        this(message, cause, null);
    }

    /** @param report what the run did before it failed (retries and corrupted transfers included), or null */
    public ExecutionFailedException(String message, Throwable cause, ExecutionReport report) {
        super(message, cause);
        this.report = report;
    }

    /** What the failed run did before it stopped, or null when unknown. */
    public ExecutionReport report() {
        return report;
    }
}
