package io.tenplex.adapters.downtime;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * A phase of a rank that took a slower way than it could have, and why (a load read over REST, not from
 * shared memory, because the daemon had no room to copy its tensors there): reported with the rank's
 * downtime marks ({@code "slow": [{"phase", "what", "why"}]}) and shown with the change's split, so that
 * a slow change says what made it slow.
 *
 * @param rank the rank that reported it
 * @param phase one of {@link RankReport#PHASES}
 * @param what what went the slower way (e.g. "12 tensors, 695 MB, over REST")
 * @param why the reason the rank was given
 */
public record SlowPath(int rank, String phase, String what, String why) {
    /** The longest {@code what} taken. */
    static final int MAX_WHAT = 160;
    /** The longest {@code why} taken. */
    static final int MAX_WHY = 600;
    private static final Set<String> FIELDS = Set.of("phase", "what", "why");

    /** Parses a report's {@code slow} list (at most one entry per phase); empty when absent. */
    static List<SlowPath> parse(int rank, JsonNode list) {
        if (list == null) {
            return List.of();
        }
        if (!list.isArray() || list.size() > RankReport.PHASES.size()) {
            throw new IllegalArgumentException("\"slow\" must be a list of at most " + RankReport.PHASES.size()
                    + " {phase, what, why} objects, got " + (list.isArray() ? list.size() + " entries" : list));
        }
        List<SlowPath> out = new ArrayList<>();
        for (JsonNode n : list) {
            if (!n.isObject()) {
                throw new IllegalArgumentException("a slow path is a {phase, what, why} object, got " + n);
            }
            for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!FIELDS.contains(f)) {
                    throw new IllegalArgumentException("unknown field \"" + f + "\" in a slow path (expected: phase, "
                            + "what, why)");
                }
            }
            String phase = text(n, "phase", 32);
            if (!RankReport.PHASES.contains(phase)) {
                throw new IllegalArgumentException("unknown downtime phase \"" + phase + "\" in a slow path (one of "
                        + String.join(", ", RankReport.PHASES) + ")");
            }
            if (out.stream().anyMatch(p -> p.phase.equals(phase))) {
                throw new IllegalArgumentException("phase \"" + phase + "\" has two slow paths in one report");
            }
            out.add(new SlowPath(rank, phase, text(n, "what", MAX_WHAT), text(n, "why", MAX_WHY)));
        }
        return List.copyOf(out);
    }

    private static String text(JsonNode n, String field, int max) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual() || v.asText().isBlank() || v.asText().length() > max) {
            throw new IllegalArgumentException("a slow path's \"" + field + "\" must be a text of 1 to " + max
                    + " characters, got " + (v == null ? "none" : v.isTextual() ? v.asText().length() + " characters" : v));
        }
        return v.asText();
    }
}
