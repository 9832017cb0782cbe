package io.tenplex.transform;

/** A plan could not be executed (every replica of some piece failed); nothing was completed for it. */
public final class ExecutionFailedException extends Exception {
    public ExecutionFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
