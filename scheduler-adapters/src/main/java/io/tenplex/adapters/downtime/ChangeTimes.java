package io.tenplex.adapters.downtime;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What the daemon itself measured of one resource change, for the downtime split: when it was posted and
 * when it committed (wall clock, comparable with the ranks' marks on one host), and how long planning,
 * moving and the commit took. Written by the change's thread, read by status requests.
 */
public final class ChangeTimes {
    private final double postedAt = System.currentTimeMillis() / 1e3;
    private volatile double committedAt;
    private volatile long planNanos = -1;
    private volatile long moveMillis = -1;
    private volatile long commitMillis = -1;
    private final AtomicBoolean recorded = new AtomicBoolean();
    private volatile Map<Integer, String> slowMoves;

    /** Planning (choosing the configuration and the plan) took {@code nanos}. */
    public void planned(long nanos) {
        planNanos = nanos;
    }

    /**
     * The reconfiguration committed now.
     *
     * @param moveMillis its check and execute phases
     * @param commitMillis its commit phase
     */
    public void committed(long moveMillis, long commitMillis) {
        this.moveMillis = moveMillis;
        this.commitMillis = commitMillis;
        committedAt = System.currentTimeMillis() / 1e3;
    }

    /** By worker, why its part of the move took slower memory than it could have ({@link DowntimeSplit#slowMoves}). */
    public void slowMoves(Map<Integer, String> byWorker) {
        slowMoves = byWorker.isEmpty() ? null : Map.copyOf(new TreeMap<>(byWorker));
    }

    /** Null when no part's move was slower than it could be. */
    Map<Integer, String> slowMoves() {
        return slowMoves == null ? null : new TreeMap<>(slowMoves);
    }

    double postedAt() {
        return postedAt;
    }

    /** When the change committed (seconds since the epoch), or 0 before. */
    double committedAt() {
        return committedAt;
    }

    Double planSeconds() {
        return planNanos < 0 ? null : planNanos / 1e9;
    }

    Double moveSeconds() {
        return moveMillis < 0 ? null : moveMillis / 1e3;
    }

    Double commitSeconds() {
        return commitMillis < 0 ? null : commitMillis / 1e3;
    }

    /** True the first time it is called: the complete split goes to {@code /metrics} once. */
    boolean firstRecord() {
        return recorded.compareAndSet(false, true);
    }
}
