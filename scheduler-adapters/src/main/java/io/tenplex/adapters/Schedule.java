package io.tenplex.adapters;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ParallelConfigJson;
import io.tenplex.ptc.ParallelConfig;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The prototype's {@code schedule.json}: a list of {@code {"step": S, "size": N}} (or {@code "time"}
 * in minutes instead of {@code step}); size 0 stops the job. As an extension an entry may fix the
 * configuration with {@code tp}, {@code pp} and {@code dp} (their product is the size), which the
 * prototype's table cannot express when two entries have the same size. Any other key is refused, with
 * the nearest known key suggested, so that a misspelt key is not silently ignored.
 */
public final class Schedule {
    /** The keys an entry may have; any other is refused (a misspelt key would otherwise be ignored). */
    static final List<String> KEYS = List.of("step", "time", "size", "tp", "pp", "dp");

    /** One entry: when (a step or minutes since the start), the size, and an optional fixed configuration. */
    public record Entry(long step, double minutes, int size, ParallelConfig config) {
        public boolean byStep() {
            return step >= 0;
        }

        public boolean stops() {
            return size == 0;
        }

        public String when() {
            return byStep() ? "step " + step : minutes + " min";
        }
    }

    private final List<Entry> entries;

    private Schedule(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    public List<Entry> entries() {
        return entries;
    }

    public static Schedule parse(String text) {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new IllegalArgumentException("schedule is not valid JSON: " + e.getMessage().lines().findFirst().orElse(""));
        }
        if (root == null || !root.isArray() || root.isEmpty()) {
            throw new IllegalArgumentException("a schedule is a non-empty JSON list of {\"step\" or \"time\", \"size\"}");
        }
        List<Entry> out = new ArrayList<>();
        for (int i = 0; i < root.size(); i++) {
            String where = "schedule entry " + i;
            Entry entry = entry(root.get(i), where, out.isEmpty() ? null : out.get(0).byStep());
            if (!out.isEmpty()) {
                Entry prev = out.get(out.size() - 1);
                if (entry.byStep() ? entry.step() <= prev.step() : entry.minutes() <= prev.minutes()) {
                    throw new IllegalArgumentException(where + ": " + entry.when() + " is not after " + prev.when());
                }
                if (prev.stops()) {
                    throw new IllegalArgumentException(where + ": comes after the job was stopped (size 0)");
                }
            } else if (entry.stops()) {
                throw new IllegalArgumentException(where + ": the first entry must start the job (size >= 1)");
            }
            out.add(entry);
        }
        if (out.get(0).byStep() ? out.get(0).step() != 0 : out.get(0).minutes() != 0) {
            throw new IllegalArgumentException("schedule entry 0 must be at step 0 (or time 0): it sets the starting size");
        }
        return new Schedule(out);
    }

    /** One entry, checked on its own ({@code bySteps}: what the entries before it use, or null for the first). */
    private static Entry entry(JsonNode e, String where, Boolean bySteps) {
        checkKeys(e, where);
        boolean step = e.has("step");
        if (step == e.has("time")) {
            throw new IllegalArgumentException(where + ": give exactly one of \"step\" and \"time\"");
        }
        if (bySteps != null && bySteps != step) {
            throw new IllegalArgumentException(where + ": a schedule uses either steps or times, not both");
        }
        JsonNode s = e.path("size");
        if (s.isMissingNode()) {
            throw new IllegalArgumentException(where + ": \"size\" is missing");
        }
        if (!s.canConvertToInt() || s.asInt() < 0) {
            throw new IllegalArgumentException(where + ": \"size\" must be an integer >= 0 (0 stops the job)");
        }
        long at = -1;
        double minutes = -1;
        if (step) {
            if (!e.get("step").canConvertToLong() || e.get("step").asLong() < 0) {
                throw new IllegalArgumentException(where + ": \"step\" must be an integer >= 0");
            }
            at = e.get("step").asLong();
        } else {
            if (!e.get("time").isNumber() || e.get("time").asDouble() < 0) {
                throw new IllegalArgumentException(where + ": \"time\" must be a number of minutes >= 0");
            }
            minutes = e.get("time").asDouble();
        }
        ParallelConfig config = null;
        if (e.has("tp") || e.has("pp") || e.has("dp")) {
            config = ParallelConfigJson.parse(e, where + ": ");
            if (config.worldSize() != s.asInt()) {
                throw new IllegalArgumentException(where + ": tp*pp*dp = " + config.worldSize() + " but size is "
                        + s.asInt());
            }
        }
        return new Entry(at, minutes, s.asInt(), config);
    }

    /** Refuses an entry that is not an object or has a key outside {@link #KEYS}, naming the nearest known key. */
    private static void checkKeys(JsonNode e, String where) {
        if (!e.isObject()) {
            throw new IllegalArgumentException(where + ": an entry is a JSON object, not " + e);
        }
        for (Iterator<String> names = e.fieldNames(); names.hasNext(); ) {
            String key = names.next();
            if (KEYS.contains(key)) {
                continue;
            }
            String nearest = null;
            int best = 3;
            for (String known : KEYS) {
                int d = distance(key, known);
                if (d < best) {
                    best = d;
                    nearest = known;
                }
            }
            String hint = nearest == null ? "" : " (did you mean \"" + nearest + "\"?)";
            throw new IllegalArgumentException(where + ": unknown key \"" + key + "\"" + hint + "; known keys: "
                    + String.join(", ", KEYS));
        }
    }

    /** Levenshtein distance: the fewest single-character insertions, deletions and substitutions. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j], cur[j - 1]) + 1);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }
}
