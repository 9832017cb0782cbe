package io.tenplex.jobs;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.JobMetrics;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The stop flag of every job on this daemon: raised by the lifecycle when the job's resources change
 * (optionally "at step S", so that every rank stops after the same step), read by training processes
 * before each step, cleared when the relaunched ranks may run.
 */
public final class StopFlags {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StopFlags.class);
    /** A raised flag: from which step on ranks stop (empty: at once), why, and when it was raised. */
    public record Flag(OptionalLong atStep, String reason, long raisedAtMillis) {
        boolean stops(OptionalLong step) {
            return atStep.isEmpty() || step.isEmpty() || step.getAsLong() >= atStep.getAsLong();
        }
    }

    /** The longest reason a flag keeps (characters). */
    static final int MAX_REASON = 1024;
    /** The most jobs whose raise counts are kept; counts of jobs without a raised flag are dropped first. */
    public static final int MAX_JOBS = 4096;

    private final Map<String, Flag> flags = new ConcurrentHashMap<>();
    /** Keeps each raised flag across a restart (the checkpoint directory), or null. */
    private volatile Keeper keeper;

    /** Where raised flags are kept: told of each raise before it takes effect ({@code flag}) and each clear (null). */
    public interface Keeper {
        void kept(String job, Flag flag);
    }

    /** Keeps every raise and clear from now on with {@code k}. */
    public void keepWith(Keeper k) {
        keeper = k;
    }
    private final Map<String, Long> raises = new ConcurrentHashMap<>();
    /** Reads of each raised flag since it was raised (kept with the flag, dropped when it is cleared). */
    private final Map<String, Asks> asks = new ConcurrentHashMap<>();
    /** Every rank's read, raised flag or not: the steps they said they finished, when they last read. */
    private final RankActivity activity = new RankActivity();

    /**
     * How ranks read a raised flag: how many reads since it was raised, and the most steps a read said
     * were finished (null when no read gave {@code step}). A launcher whose ranks ended without
     * saving for a change tells "the script never asks" from "it ended before the step" by it.
     */
    public record Asks(long count, Long highestStep) {
        Asks plus(OptionalLong step) {
            Long h = step.isEmpty() ? highestStep : Long.valueOf(highestStep == null ? step.getAsLong()
                    : Math.max(highestStep, step.getAsLong()));
            return new Asks(count + 1, h);
        }
    }

    /**
     * @throws IllegalArgumentException a negative step, a reason over {@link #MAX_REASON} characters,
     *     or {@link #MAX_JOBS} jobs with raised flags already
     */
    public synchronized void raise(String job, OptionalLong atStep, String reason) {
        if (atStep.isPresent() && atStep.getAsLong() < 0) {
            throw new IllegalArgumentException("atStep " + atStep.getAsLong() + " is negative");
        }
        if (reason.length() > MAX_REASON) {
            throw new IllegalArgumentException("reason has " + reason.length() + " characters; at most " + MAX_REASON);
        }
        new JobLayout(job);
        Flag before = flags.get(job);
        if (before != null && before.atStep().equals(atStep) && before.reason().equals(reason)) {
            return; // the same raise again (a coordinator also tells itself): not a new one
        }
        makeRoomFor(job);
        Flag raised = new Flag(atStep, reason, System.currentTimeMillis());
        Keeper k = keeper;
        if (k != null) {
            k.kept(job, raised); // kept first: a flag that cannot be kept is not raised
        }
        flags.put(job, raised);
        asks.put(job, new Asks(0, null));
        raises.merge(job, 1L, Long::sum);
        JobMetrics.STOP_FLAGS.inc();
        JobMetrics.STOP_FLAGS_UP.set(flags.size());
        LOG.info("stop flag raised job={} step={} reason: {}", job, atStep.isPresent() ? atStep.getAsLong() : "any", reason);
    }

    /** Keeps at most {@link #MAX_JOBS} jobs: forgets the count of a job whose flag is not raised. */
    private void makeRoomFor(String job) {
        if (raises.containsKey(job) || raises.size() < MAX_JOBS) {
            return;
        }
        String idle = raises.keySet().stream().filter(j -> !flags.containsKey(j)).findAny().orElseThrow(
                () -> new IllegalArgumentException("stop flags of " + MAX_JOBS + " jobs are raised on this daemon; "
                        + "clear some first"));
        raises.remove(idle);
    }

    /** How often the job's flag has been raised on this daemon (a launcher tells a stop from an end by it). */
    public long raises(String job) {
        return raises.getOrDefault(job, 0L);
    }

    /** The jobs whose flag has been raised on this daemon (raised now or before). */
    public java.util.Set<String> jobs() {
        return java.util.Set.copyOf(raises.keySet());
    }

    /** Clears the job's flag and forgets that it was ever raised and what its ranks said (the job was removed). */
    public void forget(String job) {
        clear(job);
        raises.remove(job);
        activity.forget(job);
    }

    /** What the ranks of each job said when they read their flag (and, told by the facade, when they saved). */
    public RankActivity activity() {
        return activity;
    }

    public void clear(String job) {
        asks.remove(job);
        if (flags.remove(job) != null) {
            Keeper k = keeper;
            if (k != null) {
                k.kept(job, null);
            }
            JobMetrics.STOP_FLAGS_UP.set(flags.size());
            LOG.info("stop flag cleared job={}", job);
        }
    }

    public Optional<Flag> flag(String job) {
        return Optional.ofNullable(flags.get(job));
    }

    /** Whether a rank of {@code job} that has finished {@code step} steps (empty: unknown) must stop. */
    public boolean shouldStop(String job, OptionalLong step) {
        Flag f = flags.get(job);
        return f != null && f.stops(step);
    }

    /**
     * The answer of {@code GET|POST|DELETE /api/v1/jobs/<job>/stop}: a {@link Lowered} flag, or a
     * {@link Raised} one with its step and reason.
     */
    public sealed interface Status permits Lowered, Raised {
        /** Whether a rank that has finished the steps asked about must stop. */
        boolean stop();

        boolean raised();

        /** How often the flag has been raised on this daemon. */
        long raises();
    }

    /** A flag that is not raised ({@code stop} and {@code raised} are false). */
    public record Lowered(boolean stop, boolean raised, long raises) implements Status {
    }

    /**
     * A raised flag: from which step on ranks stop ({@code atStep} null: at once, always written), why,
     * and how it has been read since it was raised ({@code asks}, not counting the read answered).
     */
    public record Raised(boolean stop, boolean raised, long raises, Long atStep, String reason, Asks asks)
            implements Status {
    }

    /** The flag as {@code GET /api/v1/jobs/<job>/stop} answers it (a read that is not counted as an ask). */
    public Status describe(String job, OptionalLong step) {
        Flag f = flags.get(job);
        if (f == null) {
            return new Lowered(false, false, raises(job));
        }
        return new Raised(f.stops(step), true, raises(job), f.atStep().isPresent() ? f.atStep().getAsLong() : null,
                f.reason(), asks.getOrDefault(job, new Asks(0, null)));
    }

    /** A rank's read of the flag (finished {@code step} steps, when given): the flag's answer; counted in its asks. */
    public Status ask(String job, OptionalLong step) {
        Status s = describe(job, step);
        asks.computeIfPresent(job, (j, a) -> a.plus(step));
        activity.read(job, step);
        return s;
    }

    /** The prototype's read ({@code GET /stop?job=}): whether a rank that finished {@code step} steps stops; counted. */
    public boolean askStop(String job, OptionalLong step) {
        boolean stop = shouldStop(job, step);
        asks.computeIfPresent(job, (j, a) -> a.plus(step));
        activity.read(job, step);
        return stop;
    }

    public static OptionalLong step(String s) {
        if (s == null || s.isEmpty()) {
            return OptionalLong.empty();
        }
        try {
            long v = Long.parseLong(s);
            if (v < 0) {
                throw new NumberFormatException();
            }
            return OptionalLong.of(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("step '" + s + "' is not a non-negative integer");
        }
    }

    /** Whether any job's raised flag stops a rank that has finished {@code step} steps (the prototype's one-job view). */
    public boolean anyStops(OptionalLong step) {
        return flags.values().stream().anyMatch(f -> f.stops(step));
    }
}
