package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Waits for a state the server reaches on its own after a response has been read: a closed connection's abort, or
 * the release of a blob a finished response held (the release runs on the event loop once the write completes, which
 * may be after the client has the last byte). Polls the condition; fails after 20 s.
 */
final class Await {
    private static final long LIMIT_NANOS = 20_000_000_000L;

    private Await() {
    }

    static void until(String what, BooleanSupplier done) throws InterruptedException {
        long end = System.nanoTime() + LIMIT_NANOS;
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < end, "timed out waiting for " + what);
            Thread.sleep(5); // polling the condition
        }
    }

    static void value(String what, long want, LongSupplier got) throws InterruptedException {
        until(what + " == " + want + " (is " + got.getAsLong() + ")", () -> got.getAsLong() == want);
    }
}
