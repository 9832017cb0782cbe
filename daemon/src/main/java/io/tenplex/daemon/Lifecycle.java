package io.tenplex.daemon;

import java.util.ArrayDeque;
import java.util.Deque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stack of started components: each is registered once it has started, and {@link #close()} closes
 * them in reverse order. A start that fails closes what had started before it. A close that fails is
 * logged and does not skip the others; {@link #close()} is idempotent.
 */
final class Lifecycle implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Lifecycle.class);

    /** Starts one component; may fail with {@code E}. */
    @FunctionalInterface
    interface Start<T, E extends Exception> {
        T start() throws E;
    }

    private record Started(String name, AutoCloseable closer) {
    }

    private final Deque<Started> started = new ArrayDeque<>();
    private boolean closed;

    /** Registers a started component, closed by its own {@code close()}; returns it. */
    synchronized <T extends AutoCloseable> T add(String name, T component) {
        return add(name, component, component);
    }

    /** Registers a started component that {@code closer} closes; returns it. */
    synchronized <T> T add(String name, T component, AutoCloseable closer) {
        if (closed) {
            throw new IllegalStateException("lifecycle already closed; cannot add " + name);
        }
        started.push(new Started(name, closer));
        return component;
    }

    /**
     * Runs {@code start} and registers what it returns; when it fails, closes everything started so
     * far (in reverse) and rethrows.
     */
    <T extends AutoCloseable, E extends Exception> T start(String name, Start<T, E> start) throws E {
        T component;
        try {
            component = start.start();
        } catch (Exception | Error e) {
            LOG.warn("{} failed to start; closing what started", name);
            close();
            throw e;
        }
        return add(name, component);
    }

    /** The names of the started components, in start order. */
    synchronized java.util.List<String> names() {
        java.util.List<String> out = new java.util.ArrayList<>();
        started.descendingIterator().forEachRemaining(s -> out.add(s.name()));
        return out;
    }

    /** Closes every started component in reverse start order; a failing close does not stop the others. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        while (!started.isEmpty()) {
            Started s = started.pop();
            try {
                s.closer().close();
            } catch (Exception | Error e) {
                LOG.warn("closing {} failed: {}", s.name(), e.toString());
            }
        }
    }
}
