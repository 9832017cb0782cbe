package io.tenplex.jobs.generations;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Generations of a job that this daemon had and lost, each with its reason: a durable copy found
 * damaged or not restored at a start, a generation completed but not flushed before a restart, a
 * generation the job went back from. {@code GET .../generations} lists them ({@code lost}), so that a
 * job that now loads an older step says why rather than falling back silently. At most
 * {@value #PER_JOB} per job, the newest kept; forgotten with the job's tree.
 */
public final class LostGenerations {
    static final int PER_JOB = 32;

    private final Map<String, TreeMap<Long, String>> lost = new LinkedHashMap<>();

    /** Records that {@code job}'s generation {@code step} is lost here, and why. */
    public synchronized void lost(String job, long step, String reason) {
        TreeMap<Long, String> m = lost.computeIfAbsent(job, j -> new TreeMap<>());
        m.put(step, reason);
        while (m.size() > PER_JOB) {
            m.pollFirstEntry();
        }
    }

    /** A step that is here again (saved anew, restored) is no longer lost. */
    synchronized void found(String job, long step) {
        TreeMap<Long, String> m = lost.get(job);
        if (m != null) {
            m.remove(step);
        }
    }

    /** Step to reason, oldest first. */
    synchronized TreeMap<Long, String> of(String job) {
        return new TreeMap<>(lost.getOrDefault(job, new TreeMap<>()));
    }

    /** The jobs with a lost generation on record (a daemon that lost every generation of a job still reports them). */
    public synchronized java.util.Set<String> jobs() {
        return new java.util.TreeSet<>(lost.keySet());
    }

    /** Forgets the job (its tree was deleted). */
    public synchronized void forget(String job) {
        lost.remove(job);
    }
}
