package io.tenplex.jobs.durable;

import java.io.IOException;

/** A durable generation whose bytes cannot be restored as written (a bad or missing block). */
public final class DamagedGenerationException extends IOException {
    private static final long serialVersionUID = 1L;

    DamagedGenerationException(String message) {
        super(message);
    }

    DamagedGenerationException(String message, Throwable cause) {
        super(message, cause);
    }
}
