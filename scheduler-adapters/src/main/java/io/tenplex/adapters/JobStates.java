package io.tenplex.adapters;

import io.tenplex.jobs.RankActivity;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A job's state as this daemon sees it ({@code tenplex_job_state}), one of a fixed set: the states of a
 * {@link ResourceChange} other than {@code DONE}, lower-cased in the enum's order (a done change leaves
 * the job to run), then {@code running} and {@code idle}. The first that holds, in this order:
 * <ol>
 *   <li>{@code reconfiguring}: a resource change of the job reconfigures, or a reconfiguration (or a part
 *       of one) of the job runs on this daemon;
 *   <li>{@code stopping}: a resource change of the job waits for the ranks' save, or its stop flag is up
 *       here (raised by a change on another daemon, or by hand);
 *   <li>the final state of the job's last resource change kept here ({@code failed}, and any other final
 *       state but {@code done}), while no rank of the job has saved since it ended;
 *   <li>{@code running}: a rank of the job read its stop flag or saved within the last {@link #ACTIVE_SECONDS} s;
 *   <li>{@code idle}: none of these.
 * </ol>
 */
final class JobStates {
    static final String RUNNING = "running";
    static final String IDLE = "idle";
    static final long ACTIVE_SECONDS = 60;
    private static final long ACTIVE_NANOS = TimeUnit.SECONDS.toNanos(ACTIVE_SECONDS);

    /** Every value the {@code state} label takes, in a fixed order. */
    static final List<String> NAMES = names();

    private JobStates() {
    }

    private static List<String> names() {
        List<String> out = new ArrayList<>();
        for (ResourceChange.State s : ResourceChange.State.values()) {
            if (s != ResourceChange.State.DONE) {
                out.add(name(s));
            }
        }
        out.add(RUNNING);
        out.add(IDLE);
        return List.copyOf(out);
    }

    static String name(ResourceChange.State s) {
        return s.name().toLowerCase(Locale.ROOT);
    }

    /**
     * The job's last resource change kept here: its state and when it ended ({@link System#nanoTime()},
     * 0 while it runs or finishes).
     */
    record LastChange(ResourceChange.State state, long endedNanos) {
        static LastChange of(ResourceChange c) {
            long ended = c.finishedAt();
            return new LastChange(c.state(), ended);
        }

        /** Whether a rank saved after it ended (never while it has not ended). */
        boolean savedSince(RankActivity.Seen seen) {
            return endedNanos != 0 && seen != null && seen.lastSaveNanos() != 0 && seen.lastSaveNanos() - endedNanos > 0;
        }
    }

    /**
     * The job's state.
     *
     * @param last the job's running resource change, else the one that ended last (null: none kept)
     * @param flagRaised whether its stop flag is up here
     * @param reconfiguring whether a reconfiguration or a part of one of the job runs here
     * @param seen what its ranks last told this daemon (null: nothing since the daemon started)
     * @param now {@link System#nanoTime()}
     */
    static String of(LastChange last, boolean flagRaised, boolean reconfiguring, RankActivity.Seen seen, long now) {
        ResourceChange.State s = last == null ? null : last.state();
        if (reconfiguring || s == ResourceChange.State.RECONFIGURING) {
            return name(ResourceChange.State.RECONFIGURING);
        }
        if (flagRaised || s == ResourceChange.State.STOPPING) {
            return name(ResourceChange.State.STOPPING);
        }
        if (s != null && s != ResourceChange.State.DONE && !last.savedSince(seen)) {
            return name(s);
        }
        return seen != null && seen.lastNanos() != 0 && now - seen.lastNanos() <= ACTIVE_NANOS ? RUNNING : IDLE;
    }

    /** Whether a resource change is pending in {@code state}: the job stops or reconfigures for one. */
    static boolean pending(String state) {
        return state.equals(name(ResourceChange.State.STOPPING)) || state.equals(name(ResourceChange.State.RECONFIGURING));
    }
}
