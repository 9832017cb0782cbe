package io.tenplex.jobs.reconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Things a daemon keeps per job and id (parts, reconfigurations, resource changes) until they are
 * forgotten: a finished entry goes after a retention, the oldest finished ones beyond a count, and
 * every finished entry of a job when the job is forgotten. Entries that still run always stay.
 * Thread-safe.
 *
 * @param <V> what is kept
 */
public final class Registry<V extends Registry.Finishing> {
    /** An entry that reaches a final state. */
    public interface Finishing {
        /** When it reached a final state ({@link System#nanoTime()}), 0 while it runs. */
        long finishedAt();

        /** Whether it may be forgotten at {@code nanoTime} with this retention (by default: finished before). */
        default boolean expired(long nanoTime, long retentionNanos) {
            long f = finishedAt();
            return f != 0 && nanoTime - f > retentionNanos;
        }
    }

    private record Key(String job, String id) {
    }

    private final Map<Key, V> entries = new ConcurrentHashMap<>();
    private volatile Duration retention;
    private final int maxFinished;
    private final LongSupplier clock;

    /**
     * @param retention how long a finished entry is kept
     * @param maxFinished how many finished entries are kept at most (the oldest go first)
     * @param clock the time in nanoseconds ({@link System#nanoTime} outside tests)
     */
    public Registry(Duration retention, int maxFinished, LongSupplier clock) {
        this.retention = retention;
        this.maxFinished = maxFinished;
        this.clock = clock;
    }

    /** How long finished entries are kept from now on. */
    public void setRetention(Duration retention) {
        this.retention = retention;
    }

    public Optional<V> get(String job, String id) {
        return Optional.ofNullable(entries.get(new Key(job, id)));
    }

    /** The entry of {@code id}, created by {@code create} when there is none (after a prune). */
    public V computeIfAbsent(String job, String id, java.util.function.Supplier<V> create) {
        prune();
        return entries.computeIfAbsent(new Key(job, id), k -> create.get());
    }

    public void put(String job, String id, V value) {
        prune();
        entries.put(new Key(job, id), value);
    }

    /** The entries of a job. */
    public List<V> of(String job) {
        return entries.entrySet().stream().filter(e -> e.getKey().job().equals(job)).map(Map.Entry::getValue).toList();
    }

    /** How many entries are kept (all jobs). */
    public int size() {
        return entries.size();
    }

    /** Forgets the finished entries of a job (running ones stay until they finish and expire). */
    public void forget(String job) {
        entries.entrySet().removeIf(e -> e.getKey().job().equals(job) && e.getValue().finishedAt() != 0);
    }

    /** Forgets finished entries older than the retention, and the oldest finished beyond the count. */
    public void prune() {
        long now = clock.getAsLong();
        long age = retention.toNanos();
        entries.values().removeIf(v -> v.expired(now, age));
        List<Map.Entry<Key, V>> finished = new ArrayList<>(entries.entrySet().stream()
                .filter(e -> e.getValue().finishedAt() != 0).toList());
        if (finished.size() > maxFinished) {
            finished.sort(Comparator.comparingLong(e -> e.getValue().finishedAt()));
            finished.subList(0, finished.size() - maxFinished).forEach(e -> entries.remove(e.getKey(), e.getValue()));
        }
    }
}
