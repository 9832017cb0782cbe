package io.tenplex.adapters.downtime;

import io.tenplex.store.StoreException;
import java.util.Map;
import java.util.TreeMap;

/**
 * The ranks' downtime reports one resource change holds, per step: the generation it moved, or while it
 * waits for the save, the steps its ranks sealed before it knew which one completes (at most
 * {@link #MAX_STEPS}). Each (rank, phase) of a step is kept once: the same time again changes nothing, a
 * different one is refused. The reports live and go with their change; nothing evicts them.
 */
public final class ChangeReports {
    /** Steps one change holds: its generation and the steps its stopped ranks sealed before it completed. */
    public static final int MAX_STEPS = 4;
    /** Times kept per step: the old and the new world's ranks, each phase once, with room to spare. */
    public static final int MAX_MARKS_PER_STEP = 1 << 16;

    private final TreeMap<Long, StepMarks> steps = new TreeMap<>();

    /**
     * Whether {@code r} could be kept, nothing kept.
     *
     * @param change the change's id, for the messages
     * @throws StoreException conflict: a (rank, phase) was reported with another time, or the change holds
     *     {@link #MAX_STEPS} other steps; too large: the step holds {@link #MAX_MARKS_PER_STEP} times
     */
    public synchronized void check(RankReport r, String change) {
        StepMarks m = steps.get(r.step());
        if (m == null) {
            if (steps.size() >= MAX_STEPS) {
                throw StoreException.conflict("resource change " + change + " already holds downtime reports of "
                        + MAX_STEPS + " steps " + steps.keySet() + "; step " + r.step() + " is not kept");
            }
            return;
        }
        String again = m.changed(r);
        if (again != null) {
            throw StoreException.conflict("rank " + r.rank() + " already reported " + again + " at "
                    + m.time(again, r.rank()) + " for step " + r.step() + " of resource change " + change
                    + "; a rank reports each phase of a change once, got " + r.marks().get(again));
        }
        if (m.count() + m.added(r) > MAX_MARKS_PER_STEP) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "step " + r.step() + " of resource change "
                    + change + " already holds " + m.count() + " downtime marks; the limit is " + MAX_MARKS_PER_STEP);
        }
    }

    /**
     * Keeps {@code r} after {@link #check} (the caller holds what it checked against still).
     *
     * @throws StoreException as {@link #check}
     */
    public synchronized void add(RankReport r, String change) {
        check(r, change);
        steps.computeIfAbsent(r.step(), s -> new StepMarks()).add(r);
    }

    /** A copy of the marks of {@code step} (empty when none were reported). */
    public synchronized StepMarks of(long step) {
        StepMarks m = steps.get(step);
        return m == null ? new StepMarks() : m.copy();
    }

    /** The steps held, with the times each holds. */
    public synchronized Map<Long, Integer> held() {
        Map<Long, Integer> h = new TreeMap<>();
        steps.forEach((s, m) -> h.put(s, m.count()));
        return h;
    }
}
