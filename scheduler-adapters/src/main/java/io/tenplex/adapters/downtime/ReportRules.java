package io.tenplex.adapters.downtime;

import io.tenplex.store.StoreException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What a rank's report must fit to join a resource change's downtime: its rank is one of the change's old
 * world (the ranks that saved the generation: {@code stop} and {@code save}) or of its new world (every other
 * phase, and {@code spawn}), and each time lies in the change's window, from its posting to now, with
 * {@link #SKEW_SECONDS} of slack either side for the clocks of the daemon and the ranks on its host.
 */
public final class ReportRules {
    /** Slack for the clocks of the daemon and its ranks (the same host: rounding, not drift). */
    public static final double SKEW_SECONDS = 2;
    /** The phases the ranks of the old configuration report (the rest: the new configuration's ranks). */
    static final Set<String> OLD_WORLD = Set.of("stop", "save");

    private ReportRules() {
    }

    /**
     * Checks {@code r} against one change, nothing kept.
     *
     * @param change the change's id, for the messages
     * @param t the change's times (its posting opens the window)
     * @param now the daemon's wall clock now (seconds since the epoch), the window's end
     * @param oldWorld the ranks that saved the change's generation (0: not known)
     * @param newWorld the ranks of the configuration it chose (0: not chosen yet)
     * @throws IllegalArgumentException a rank outside its world, a time outside the window
     * @throws StoreException conflict: a new rank's phase before the change chose its configuration
     */
    public static void check(RankReport r, String change, ChangeTimes t, double now, int oldWorld, int newWorld) {
        boolean fromOld = r.marks().keySet().stream().anyMatch(OLD_WORLD::contains);
        boolean fromNew = r.spawn() != null || r.marks().keySet().stream().anyMatch(p -> !OLD_WORLD.contains(p));
        if (fromOld) {
            inWorld(r.rank(), oldWorld, "old", change, "stop and save come from the ranks that saved step " + r.step());
        }
        if (fromNew && newWorld <= 0) {
            throw StoreException.conflict("resource change " + change + " has not chosen its new configuration yet: "
                    + "its new ranks report " + String.join(", ", r.marks().keySet()) + " after it commits");
        }
        if (fromNew) {
            inWorld(r.rank(), newWorld, "new", change, "phases after the save come from the ranks it started");
        }
        if (r.spawn() != null) {
            inWindow("\"spawn\"", r.spawn(), change, t, now);
        }
        for (Map.Entry<String, Double> m : r.marks().entrySet()) {
            inWindow("mark " + m.getKey(), m.getValue(), change, t, now);
        }
    }

    private static void inWorld(int rank, int world, String which, String change, String why) {
        if (world <= 0) {
            throw StoreException.conflict("resource change " + change + " does not know its " + which + " world; "
                    + "rank " + rank + "'s report is not kept");
        }
        if (rank >= world) {
            throw new IllegalArgumentException("rank " + rank + " is outside the " + which + " world of " + world
                    + (world == 1 ? " rank" : " ranks") + " of resource change " + change + " (" + why + ")");
        }
    }

    private static void inWindow(String what, double at, String change, ChangeTimes t, double now) {
        double from = t.postedAt() - SKEW_SECONDS;
        double to = now + SKEW_SECONDS;
        if (!(at >= from && at <= to)) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "%s at %.6f is outside the window of "
                    + "resource change %s: from its posting at %.3f to now, %.3f, with %.0f s of slack (times are "
                    + "wall-clock seconds since the epoch on the daemon's host)", what, at, change, t.postedAt(), now,
                    SKEW_SECONDS));
        }
    }
}
