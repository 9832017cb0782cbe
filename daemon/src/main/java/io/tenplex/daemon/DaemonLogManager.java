package io.tenplex.daemon;

import java.util.logging.LogManager;

/**
 * java.util.logging's manager in tenplexd: it does not reset when the JVM shuts down. The JDK's own
 * shutdown hook would otherwise close the log handler while tenplexd's hook still logs its shutdown
 * (closing the store, unmounting), and those lines would be lost.
 */
public final class DaemonLogManager extends LogManager {
    @Override
    public void reset() {
        // kept: the handlers stay until the process ends (each record is flushed when written)
    }
}
