package io.tenplex.adapters.downtime;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * The marks the ranks reported for one step of a resource change: per phase, each rank's wall-clock time
 * (kept once: {@link ChangeReports} refuses another time for it), and each new process's start. Not
 * thread-safe: held under {@link ChangeReports}' lock, handed out as copies.
 */
public final class StepMarks {
    private final Map<String, Map<Integer, Double>> byPhase = new LinkedHashMap<>();
    private final Map<Integer, Double> spawns = new HashMap<>();
    /** The slow paths reported, the first of each (rank, phase), at most {@link #MAX_SLOW}. */
    private final Map<String, SlowPath> slow = new LinkedHashMap<>();
    private int count;
    /** Slow paths kept per step (more ranks than this reporting one are counted in the split, not listed). */
    static final int MAX_SLOW = 64;

    StepMarks() {
    }

    /** How many times this report would add (marks of a (phase, rank) not held yet, and its spawn). */
    int added(RankReport r) {
        int n = r.spawn() != null && !spawns.containsKey(r.rank()) ? 1 : 0;
        for (String p : r.marks().keySet()) {
            n += byPhase.getOrDefault(p, Map.of()).containsKey(r.rank()) ? 0 : 1;
        }
        return n;
    }

    /** The first phase ({@code spawn} for the start) that {@code r} reports with another time than held, or null. */
    String changed(RankReport r) {
        Double spawn = spawns.get(r.rank());
        if (r.spawn() != null && spawn != null && !spawn.equals(r.spawn())) {
            return "spawn";
        }
        for (Map.Entry<String, Double> e : r.marks().entrySet()) {
            Double held = byPhase.getOrDefault(e.getKey(), Map.of()).get(r.rank());
            if (held != null && !held.equals(e.getValue())) {
                return e.getKey();
            }
        }
        return null;
    }

    /** The time {@code rank} reported for {@code phase} ({@code spawn}: its start), or null. */
    Double time(String phase, int rank) {
        return phase.equals("spawn") ? spawns.get(rank) : byPhase.getOrDefault(phase, Map.of()).get(rank);
    }

    void add(RankReport r) {
        count += added(r);
        if (r.spawn() != null) {
            spawns.put(r.rank(), r.spawn());
        }
        r.marks().forEach((p, t) -> byPhase.computeIfAbsent(p, k -> new HashMap<>()).put(r.rank(), t));
        for (SlowPath p : r.slow()) {
            if (slow.size() < MAX_SLOW) {
                slow.putIfAbsent(p.rank() + "/" + p.phase(), p);
            }
        }
    }

    /** The slow paths the ranks reported, in the order they came. */
    public java.util.List<SlowPath> slow() {
        return java.util.List.copyOf(slow.values());
    }

    /** The times held (marks and spawns). */
    int count() {
        return count;
    }

    StepMarks copy() {
        StepMarks c = new StepMarks();
        byPhase.forEach((p, m) -> c.byPhase.put(p, new HashMap<>(m)));
        c.spawns.putAll(spawns);
        c.slow.putAll(slow);
        c.count = count;
        return c;
    }

    /** How many ranks marked {@code phase}. */
    public int ranks(String phase) {
        return byPhase.getOrDefault(phase, Map.of()).size();
    }

    /** The earliest time a rank marked {@code phase}. */
    public OptionalDouble earliest(String phase) {
        return byPhase.getOrDefault(phase, Map.of()).values().stream().mapToDouble(Double::doubleValue).min();
    }

    /** The latest time a rank marked {@code phase}: when every rank that reported it was done with it. */
    public OptionalDouble latest(String phase) {
        return byPhase.getOrDefault(phase, Map.of()).values().stream().mapToDouble(Double::doubleValue).max();
    }

    /** The latest start of a new process. */
    public OptionalDouble latestSpawn() {
        return spawns.values().stream().mapToDouble(Double::doubleValue).max();
    }
}
