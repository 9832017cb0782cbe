package io.tenplex.adapters.downtime;

import io.tenplex.store.StoreException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ranks' downtime reports this daemon holds, per job and step, bounded: the newest
 * {@link #MAX_STEPS} steps of a job (a report for a step older than those is not kept, and the answer
 * says so), at most {@link #MAX_MARKS_PER_STEP} times per step. Only jobs the daemon knows
 * report (the route checks), and {@link #forget} drops a job's.
 */
public final class DowntimeReports {
    /** Steps kept per job: the reconfigurations a job's status can still show. */
    public static final int MAX_STEPS = 8;
    /** Times kept per step: the old and the new world's ranks, each phase once, with room to spare. */
    public static final int MAX_MARKS_PER_STEP = 1 << 16;

    private final Map<String, LinkedHashMap<Long, StepMarks>> byJob = new HashMap<>();

    /**
     * Keeps {@code r} for {@code job}, nothing when it is refused.
     *
     * @return false when {@code r}'s step is older than the newest {@link #MAX_STEPS} steps (not kept)
     * @throws StoreException too large: the step already holds {@link #MAX_MARKS_PER_STEP} times
     */
    public synchronized boolean add(String job, RankReport r) {
        LinkedHashMap<Long, StepMarks> steps = byJob.computeIfAbsent(job, j -> new LinkedHashMap<>());
        StepMarks m = steps.get(r.step());
        if (m == null) {
            m = new StepMarks();
        }
        if (m.count() + m.added(r) > MAX_MARKS_PER_STEP) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "step " + r.step() + " of job " + job
                    + " already holds " + m.count() + " downtime marks; the limit is " + MAX_MARKS_PER_STEP);
        }
        if (!steps.containsKey(r.step()) && steps.size() >= MAX_STEPS
                && steps.keySet().stream().allMatch(s -> s > r.step())) {
            return false;
        }
        m.add(r);
        steps.put(r.step(), m);
        while (steps.size() > MAX_STEPS) {
            steps.remove(steps.keySet().stream().min(Long::compare).orElseThrow());
        }
        return true;
    }

    /** A copy of the marks of {@code job}'s {@code step} (empty when none were reported). */
    public synchronized StepMarks of(String job, long step) {
        StepMarks m = byJob.getOrDefault(job, new LinkedHashMap<>()).get(step);
        return m == null ? new StepMarks() : m.copy();
    }

    /** Drops the reports of {@code job}. */
    public synchronized void forget(String job) {
        byJob.remove(job);
    }
}
