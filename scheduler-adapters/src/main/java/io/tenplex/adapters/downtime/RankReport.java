package io.tenplex.adapters.downtime;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Limits;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One rank's report of a reconfiguration's downtime ({@code POST /api/v1/jobs/<job>/downtime}): the
 * step of the generation the reconfiguration moved (the step the rank saved, or the one it loaded), and
 * the wall-clock time (seconds since the epoch) at which each phase ended in the rank's process.
 *
 * @param rank the rank, under the configuration the process ran (old ranks report stop and save, new ranks
 *     relaunch, load and first_step)
 * @param spawn when the launcher started the process (seconds since the epoch), or null
 * @param marks phase to the wall-clock time it ended, in the order of {@link #PHASES}
 * @param slow the phases that took a slower way than they could have, and why ({@link SlowPath})
 */
public record RankReport(int rank, long step, Double spawn, Map<String, Double> marks, List<SlowPath> slow) {
    /** The phases a rank marks, in the order they happen ({@code tenplex.downtime.PHASES}). */
    public static final List<String> PHASES = List.of("stop", "save", "commit", "regroup", "relaunch", "rebuild",
            "load", "first_step");
    /** The largest body a report may have (bytes): a report holds at most one mark per phase. */
    public static final int MAX_BODY_BYTES = 16 * 1024;
    /** The latest wall-clock time a mark may carry (seconds since the epoch: the year 5138). */
    static final double MAX_WALL_SECONDS = 1e11;
    private static final Set<String> FIELDS = Set.of("rank", "step", "spawn", "marks", "slow");

    /**
     * Parses and checks a report: {@code rank} (0 to {@link Limits#MAX_RANKS} - 1), {@code step} (a
     * non-negative integer), optional {@code spawn} (seconds), {@code marks} (a list of at most one
     * {@code [phase, seconds]} pair per phase), optional {@code slow} ({@link SlowPath}). Anything else is
     * refused with the value it got.
     *
     * @throws IllegalArgumentException a field missing, unknown or out of range
     */
    public static RankReport parse(JsonNode b) {
        if (b == null || !b.isObject()) {
            throw new IllegalArgumentException("a downtime report is a JSON object {rank, step, marks[, spawn]}");
        }
        for (Iterator<String> it = b.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!FIELDS.contains(f)) {
                throw new IllegalArgumentException("unknown field \"" + f + "\" in a downtime report (expected: rank, "
                        + "step, marks, spawn, slow)");
            }
        }
        if (!b.has("rank") || !b.has("step") || !b.has("marks")) {
            throw new IllegalArgumentException("a downtime report needs \"rank\", \"step\" and \"marks\", got " + b);
        }
        int rank = Limits.intIn(b, "rank", -1, 0, Limits.MAX_RANKS - 1, "");
        JsonNode s = b.get("step");
        if (!s.isIntegralNumber() || !s.canConvertToLong() || s.asLong() < 0) {
            throw new IllegalArgumentException("\"step\" must be a non-negative integer, got " + s);
        }
        Double spawn = b.has("spawn") ? seconds(b.get("spawn"), "\"spawn\"") : null;
        return new RankReport(rank, s.asLong(), spawn, marks(b.get("marks")), SlowPath.parse(rank, b.get("slow")));
    }

    private static Map<String, Double> marks(JsonNode list) {
        if (!list.isArray() || list.size() > PHASES.size()) {
            throw new IllegalArgumentException("\"marks\" must be a list of at most " + PHASES.size()
                    + " [phase, seconds] pairs, got " + (list.isArray() ? list.size() + " entries" : list));
        }
        Map<String, Double> got = new LinkedHashMap<>();
        for (JsonNode m : list) {
            if (!m.isArray() || m.size() != 2 || !m.get(0).isTextual()) {
                throw new IllegalArgumentException("a mark is a [phase, seconds] pair, got " + m);
            }
            String phase = m.get(0).asText();
            if (!PHASES.contains(phase)) {
                throw new IllegalArgumentException("unknown downtime phase \"" + phase + "\" (one of "
                        + String.join(", ", PHASES) + ")");
            }
            if (got.put(phase, seconds(m.get(1), "mark " + phase)) != null) {
                throw new IllegalArgumentException("phase \"" + phase + "\" is marked twice in one report (report each "
                        + "reconfiguration once, then clear the marks)");
            }
        }
        Map<String, Double> ordered = new LinkedHashMap<>();
        for (String p : PHASES) {
            if (got.containsKey(p)) {
                ordered.put(p, got.get(p));
            }
        }
        return java.util.Collections.unmodifiableMap(ordered);
    }

    private static double seconds(JsonNode v, String what) {
        double d = v.isNumber() ? v.asDouble() : Double.NaN;
        if (!(d > 0 && d < MAX_WALL_SECONDS)) {
            throw new IllegalArgumentException(what + " must be a wall-clock time in seconds since the epoch (0 < t < "
                    + "1e11), got " + v);
        }
        return d;
    }
}
