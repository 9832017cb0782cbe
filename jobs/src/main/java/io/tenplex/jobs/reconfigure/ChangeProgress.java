package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.PartStatus;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The progress of one reconfiguration as its status reports it: how long each phase took, each worker's
 * last known part status, and the failure's reason. The coordinator's thread writes them while status
 * requests read them.
 */
final class ChangeProgress {
    /** Written by the coordinator thread, read by status requests: guarded by itself. */
    private final Map<String, Long> phaseMillis = new LinkedHashMap<>();
    private final Map<Integer, PartStatus> parts = new TreeMap<>();
    private volatile String error = "";

    /** Records how long a phase took. */
    void phase(String name, long millis) {
        synchronized (phaseMillis) {
            phaseMillis.put(name, millis);
        }
    }

    /** The phases' durations so far. */
    Map<String, Long> phases() {
        synchronized (phaseMillis) {
            return new LinkedHashMap<>(phaseMillis); // a copy: the coordinator may still add phases
        }
    }

    /** Records the last known status of {@code worker}'s part. */
    void part(int worker, PartStatus status) {
        synchronized (parts) {
            parts.put(worker, status);
        }
    }

    /** Each worker's last known part status, as the status reports it. */
    Map<String, ReconfigurationStatus.Worker> workers() {
        Map<String, ReconfigurationStatus.Worker> progress = new LinkedHashMap<>();
        synchronized (parts) {
            parts.forEach((w, p) -> progress.put(Integer.toString(w), ReconfigurationStatus.Worker.of(p)));
        }
        return progress;
    }

    /** Whether the part of every one of {@code workers} was last known prepared. */
    boolean prepared(List<Integer> workers) {
        synchronized (parts) {
            return workers.stream().allMatch(w -> parts.get(w).state().equals("prepared"));
        }
    }

    /** The failure's reason, or empty. */
    String error() {
        return error;
    }

    /** Records the failure's reason. */
    void fail(String why) {
        error = why;
    }

    /** Unless a failure's reason was recorded: the first part's error, else that a part did not prepare. */
    void failFromParts() {
        if (error.isEmpty()) {
            synchronized (parts) {
                error = parts.values().stream().filter(p -> !p.error().isEmpty()).map(PartStatus::error).findFirst()
                        .orElse("a part did not prepare");
            }
        }
    }
}
