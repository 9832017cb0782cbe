package io.tenplex.adapters;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A resource change's log: its events, each logged as it happens and kept timed from the change's
 * start, and how long each of its phases took; copied into the change's status.
 */
final class ChangeLog {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ResourceChange.class);

    private final String job;
    private final String id;
    private final long started;
    private final Supplier<ResourceChange.State> state;
    private final Map<String, Long> phaseMillis = new LinkedHashMap<>();
    private final List<String> events = new ArrayList<>();

    /**
     * @param started the change's start ({@link System#nanoTime()})
     * @param state   the change's state, logged with each event
     */
    ChangeLog(String job, String id, long started, Supplier<ResourceChange.State> state) {
        this.job = job;
        this.id = id;
        this.started = started;
        this.state = state;
    }

    void phase(String name, long since) {
        synchronized (phaseMillis) {
            phaseMillis.put(name, (System.nanoTime() - since) / 1_000_000);
        }
        LOG.info("resource change phase job={} change={} phase={} duration_ms={}", job, id, name, (System.nanoTime() - since) / 1_000_000);
    }

    void event(String what) {
        LOG.info("resource change job={} change={} state={}: {}", job, id, state.get().name().toLowerCase(Locale.ROOT), what);
        synchronized (events) {
            events.add(String.format(java.util.Locale.ROOT, "%.3fs %s", (System.nanoTime() - started) / 1e9, what));
        }
    }

    /** Each phase's duration so far, in milliseconds. */
    Map<String, Long> phases() {
        synchronized (phaseMillis) {
            return new LinkedHashMap<>(phaseMillis);
        }
    }

    /** The events so far, each with its time since the start. */
    List<String> events() {
        synchronized (events) {
            return List.copyOf(events);
        }
    }
}
