package io.tenplex.store.memory;

/** An allocation would exceed the memory budget; nothing was allocated. */
public final class OutOfBudgetException extends RuntimeException {
    private final boolean everFits;

    OutOfBudgetException(String message, boolean everFits) {
        super(message);
        this.everFits = everFits;
    }

    /** False when the request is larger than the whole budget (it can never fit). */
    public boolean everFits() {
        return everFits;
    }
}
