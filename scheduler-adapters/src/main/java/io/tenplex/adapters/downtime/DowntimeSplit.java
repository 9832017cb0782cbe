package io.tenplex.adapters.downtime;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * A reconfiguration's downtime, from the end of the stop step (the first rank's) to the end of the first
 * step under the new configuration (the last rank's), split into consecutive phases: {@code save},
 * {@code commit} (the wait for the daemon's commit: planning and moving), {@code regroup} (live mode),
 * {@code relaunch} (from the commit to the new processes' load: their start, imports and process
 * groups), {@code rebuild} (live mode), {@code load} and {@code first_step}. Each phase ends when the
 * last rank that reported it was done with it (the commit: the daemon's commit in relaunch mode), and
 * none ends before the one before it, so the phases sum to {@code seconds}.
 *
 * @param complete every rank of the new configuration has reported its first step
 * @param seconds the downtime, or null while no rank has reported its first step
 * @param waitForStopSeconds from the change's posting to the end of the stop step (training went on)
 * @param phases each phase present in this mode, in order, in seconds
 * @param daemon the daemon's own times inside the commit wait: {@code plan}, {@code move}, {@code commit},
 *     and {@code spawn} (from the commit to the last new process's start: the launcher's reaction)
 * @param ranksStopped ranks that reported the stop step
 * @param ranksStarted ranks that reported their first step under the new configuration
 * @param slowPaths the phases of ranks that took a slower way, and why ({@link SlowPath}); null when none
 * @param slowMoves by worker, why its part of the move took slower memory than recycled shared memory
 *     (new memory, first touched by the move, or private memory a load copies again); null when none did
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record DowntimeSplit(boolean complete, Double seconds, Double waitForStopSeconds, Map<String, Double> phases,
        Map<String, Double> daemon, int ranksStopped, int ranksStarted, List<SlowPath> slowPaths,
        Map<Integer, String> slowMoves) {
    /** The phases after the stop step, in order. */
    static final List<String> AFTER_STOP = RankReport.PHASES.subList(1, RankReport.PHASES.size());

    /**
     * Joins the ranks' marks of the change's generation with the daemon's times.
     *
     * @param newWorld the ranks of the new configuration (the split is complete once all reported)
     */
    public static DowntimeSplit join(StepMarks m, ChangeTimes t, int newWorld) {
        OptionalDouble stop = m.earliest("stop");
        Map<String, Double> phases = new LinkedHashMap<>();
        Double seconds = null;
        if (stop.isPresent()) {
            double prev = stop.getAsDouble();
            for (String p : AFTER_STOP) {
                OptionalDouble end = end(m, t, p);
                if (end.isPresent()) {
                    double e = Math.max(end.getAsDouble(), prev); // a phase never ends before the one before it
                    phases.put(p, e - prev);
                    prev = e;
                }
            }
            seconds = m.latest("first_step").isPresent() ? prev - stop.getAsDouble() : null;
        }
        Double wait = stop.isPresent() ? Math.max(0, stop.getAsDouble() - t.postedAt()) : null;
        int started = m.ranks("first_step");
        List<SlowPath> slow = m.slow();
        return new DowntimeSplit(stop.isPresent() && started >= newWorld && newWorld > 0, seconds, wait, phases,
                daemon(m, t), m.ranks("stop"), started, slow.isEmpty() ? null : slow, t.slowMoves());
    }

    private static OptionalDouble end(StepMarks m, ChangeTimes t, String phase) {
        OptionalDouble end = m.latest(phase);
        if (end.isEmpty() && phase.equals("commit") && t.committedAt() > 0) {
            return OptionalDouble.of(t.committedAt()); // relaunch mode: no rank waits for the commit itself
        }
        return end;
    }

    private static Map<String, Double> daemon(StepMarks m, ChangeTimes t) {
        Map<String, Double> d = new LinkedHashMap<>();
        putIf(d, "plan", t.planSeconds());
        putIf(d, "move", t.moveSeconds());
        putIf(d, "commit", t.commitSeconds());
        OptionalDouble spawn = m.latestSpawn();
        if (spawn.isPresent() && t.committedAt() > 0) {
            d.put("spawn", Math.max(0, spawn.getAsDouble() - t.committedAt()));
        }
        return d;
    }

    private static void putIf(Map<String, Double> d, String k, Double v) {
        if (v != null) {
            d.put(k, v);
        }
    }
}
