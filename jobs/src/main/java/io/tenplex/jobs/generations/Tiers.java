package io.tenplex.jobs.generations;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Limits;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The checkpoint levels of each job on one daemon: which it keeps ({@link Settings}, per job, with
 * the daemon's defaults) and which each generation has reached here. L1 ({@link #MEMORY}) is the
 * daemon's store; L2 ({@link #PARTNERS}) copies of this worker's shards on the next workers; L3
 * ({@link #ERASURE}) parity blocks of a group of workers; L4 ({@link #DURABLE}) a directory on disk.
 * A generation's status ({@link GenerationsStatus}) lists the levels it has reached.
 */
public final class Tiers {
    public static final String MEMORY = "memory";
    public static final String PARTNERS = "partners";
    public static final String ERASURE = "erasure";
    public static final String DURABLE = "durable";
    private static final List<String> ORDER = List.of(MEMORY, PARTNERS, ERASURE, DURABLE);

    /**
     * What a job keeps beyond memory.
     *
     * @param partners L2: copies of each worker's shards on the next {@code partners} workers (0: none)
     * @param groupSize L3: workers per erasure-coded group ({@code k}; 0: no L3)
     * @param parity L3: parity blocks per group ({@code m})
     * @param durableKeep L4: complete generations kept on disk (0: no L4; only with a checkpoint directory)
     */
    public record Settings(int partners, int groupSize, int parity, int durableKeep) {
        public static final Settings NONE = new Settings(0, 0, 0, 0);
        public static final int MAX_PARTNERS = 16;
        public static final int MAX_GROUP = 64;
        public static final int MAX_KEEP = 1000;

        public Settings {
            if (partners < 0 || partners > MAX_PARTNERS) {
                throw new IllegalArgumentException("\"partners\" must be in [0, " + MAX_PARTNERS + "], got " + partners);
            }
            if (groupSize < 0 || groupSize > MAX_GROUP || parity < 0 || parity > MAX_GROUP
                    || (groupSize == 0) != (parity == 0)) {
                throw new IllegalArgumentException("erasure coding needs \"groupSize\" (k) and \"parity\" (m) both in [1, "
                        + MAX_GROUP + "], or both 0 (off); got k=" + groupSize + ", m=" + parity);
            }
            if (durableKeep < 0 || durableKeep > MAX_KEEP) {
                throw new IllegalArgumentException("\"durableKeep\" must be in [0, " + MAX_KEEP + "], got " + durableKeep);
            }
        }

        /** These settings with the fields {@code b} gives replaced (JSON: partners, groupSize, parity, durableKeep). */
        public Settings with(JsonNode b) {
            String where = "tiers: ";
            return new Settings(Limits.intIn(b, "partners", partners, 0, MAX_PARTNERS, where),
                    Limits.intIn(b, "groupSize", groupSize, 0, MAX_GROUP, where),
                    Limits.intIn(b, "parity", parity, 0, MAX_GROUP, where),
                    Limits.intIn(b, "durableKeep", durableKeep, 0, MAX_KEEP, where));
        }
    }

    private volatile Settings defaults = Settings.NONE;
    private final Map<String, Settings> settings = new ConcurrentHashMap<>();
    private final Map<String, TreeMap<Long, TreeSet<String>>> reached = new ConcurrentHashMap<>();
    /** job to step to level to what reaching it cost (bytes written...), shown in the generation's status. */
    private final Map<String, TreeMap<Long, Map<String, Map<String, Long>>>> details = new ConcurrentHashMap<>();

    /** The settings of jobs that set none (the daemon's configuration). */
    public void setDefaults(Settings s) {
        defaults = s;
    }

    /** The settings of jobs that set none. */
    public Settings defaults() {
        return defaults;
    }

    public Settings settings(String job) {
        return settings.getOrDefault(job, defaults);
    }

    public void set(String job, Settings s) {
        settings.put(job, s);
    }

    /** Records that generation {@code step} of {@code job} reached {@code level} on this daemon. */
    public void reached(String job, long step, String level) {
        if (!ORDER.contains(level)) {
            throw new IllegalArgumentException("unknown checkpoint level " + level);
        }
        TreeMap<Long, TreeSet<String>> steps = reached.computeIfAbsent(job, j -> new TreeMap<>());
        synchronized (steps) {
            steps.computeIfAbsent(step, s -> new TreeSet<>()).add(level);
        }
    }

    /**
     * As {@link #reached(String, long, String)}, with what reaching the level cost (e.g. a durable
     * flush's {@code bytesWritten} and {@code logicalBytes}), shown in the generation's status.
     */
    public void reached(String job, long step, String level, Map<String, Long> cost) {
        reached(job, step, level);
        TreeMap<Long, Map<String, Map<String, Long>>> steps = details.computeIfAbsent(job, j -> new TreeMap<>());
        synchronized (steps) {
            steps.computeIfAbsent(step, s -> new TreeMap<>()).put(level, Map.copyOf(cost));
        }
    }

    /**
     * Notes something about generation {@code step} under {@code key} in its status's
     * {@code levelDetails} without it reaching a level (e.g. {@code durableFailed}: a flush that failed).
     */
    public void noted(String job, long step, String key, Map<String, Long> values) {
        TreeMap<Long, Map<String, Map<String, Long>>> steps = details.computeIfAbsent(job, j -> new TreeMap<>());
        synchronized (steps) {
            steps.computeIfAbsent(step, s -> new TreeMap<>()).put(key, Map.copyOf(values));
        }
    }

    /** Per level, what reaching it cost for generation {@code step} of {@code job} (empty when nothing was noted). */
    public Map<String, Map<String, Long>> details(String job, long step) {
        TreeMap<Long, Map<String, Map<String, Long>>> steps = details.get(job);
        if (steps == null) {
            return Map.of();
        }
        synchronized (steps) {
            return Map.copyOf(steps.getOrDefault(step, Map.of()));
        }
    }

    /** The levels generation {@code step} of {@code job} reached here, cheapest first. */
    public List<String> levels(String job, long step) {
        TreeMap<Long, TreeSet<String>> steps = reached.get(job);
        if (steps == null) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        synchronized (steps) {
            TreeSet<String> got = steps.get(step);
            ORDER.stream().filter(l -> got != null && got.contains(l)).forEach(out::add);
        }
        return out;
    }

    /** A generation was dropped from this daemon: it has reached nothing here any more. */
    public void dropped(String job, long step) {
        TreeMap<Long, TreeSet<String>> steps = reached.get(job);
        if (steps != null) {
            synchronized (steps) {
                steps.remove(step);
            }
        }
        TreeMap<Long, Map<String, Map<String, Long>>> d = details.get(job);
        if (d != null) {
            synchronized (d) {
                d.remove(step);
            }
        }
    }

    /** Forgets a job. */
    public void forget(String job) {
        settings.remove(job);
        reached.remove(job);
        details.remove(job);
    }
}
