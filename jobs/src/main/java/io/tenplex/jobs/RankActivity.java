package io.tenplex.jobs;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * What the ranks of each job last told this daemon: the most steps a rank said it had finished (a read
 * of the stop flag with {@code step}, a seal of a step here or one told by another daemon), and when a
 * rank last read the stop flag and when a rank of the job last saved. {@code /metrics} shows a job's step
 * and whether it runs from it. At most {@link StopFlags#MAX_JOBS} jobs are kept (the one heard from least
 * recently is dropped first); a removed job's record is forgotten with its stop flag.
 */
public final class RankActivity {
    /**
     * What is known of a job's ranks.
     *
     * @param highestStep the most steps a rank said it finished or saved (-1: none said)
     * @param lastReadNanos when a rank last read the stop flag ({@link System#nanoTime()}; 0: never)
     * @param lastSaveNanos when a rank last saved ({@link System#nanoTime()}; 0: never)
     */
    public record Seen(long highestStep, long lastReadNanos, long lastSaveNanos) {
        private static final Seen NONE = new Seen(-1, 0, 0);

        private Seen read(OptionalLong step, long now) {
            return new Seen(Math.max(highestStep, step.orElse(-1)), now, lastSaveNanos);
        }

        private Seen saved(long step, long now) {
            return new Seen(Math.max(highestStep, step), lastReadNanos, now);
        }

        /** The newer of the last read and the last save (0: neither). */
        public long lastNanos() {
            return Math.max(lastReadNanos, lastSaveNanos);
        }
    }

    private final Map<String, Seen> jobs = new ConcurrentHashMap<>();
    private final LongSupplier clock;

    public RankActivity() {
        this(System::nanoTime);
    }

    /** @param clock nanoseconds, comparable with {@link System#nanoTime()} (tests advance it) */
    RankActivity(LongSupplier clock) {
        this.clock = clock;
    }

    /** A rank of {@code job} read its stop flag, saying it finished {@code step} steps (empty: it did not say). */
    void read(String job, OptionalLong step) {
        long now = clock.getAsLong();
        makeRoomFor(job);
        jobs.merge(job, Seen.NONE.read(step, now), (old, x) -> old.read(step, now));
    }

    /** A rank of {@code job} sealed {@code step}, here or on another daemon that told this one. */
    void saved(String job, long step) {
        long now = clock.getAsLong();
        makeRoomFor(job);
        jobs.merge(job, Seen.NONE.saved(step, now), (old, x) -> old.saved(step, now));
    }

    /** What is known of the ranks of {@code job}, if any rank has read its flag or saved since the daemon started. */
    public Optional<Seen> of(String job) {
        return Optional.ofNullable(jobs.get(job));
    }

    /** Forgets the job (it was removed). */
    void forget(String job) {
        jobs.remove(job);
    }

    /** Keeps at most {@link StopFlags#MAX_JOBS} jobs: drops the one heard from least recently. */
    private void makeRoomFor(String job) {
        if (jobs.size() < StopFlags.MAX_JOBS || jobs.containsKey(job)) {
            return;
        }
        jobs.entrySet().stream().min(java.util.Comparator.comparingLong(e -> e.getValue().lastNanos()))
                .ifPresent(e -> jobs.remove(e.getKey(), e.getValue()));
    }
}
