package io.tenplex.jobs.shared;

import io.tenplex.store.StoreException;
import io.tenplex.store.memory.ProcessStart;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shared-memory handouts of one daemon by id: save reservations a client fills, and load pins
 * that keep the bytes a client maps from being freed or reused. Each has an owner (a process on this
 * host) and a lease; {@link #reap()} ends those whose owner is gone or whose lease ran out, so a
 * client killed mid-save or mid-load leaves nothing behind.
 */
final class SharedSpaces {
    /** The longest lease a client may ask for. */
    static final long MAX_LEASE_SECONDS = 24 * 3600;
    /** Handouts open at once on one daemon, at most. */
    static final int MAX_OPEN = 4096;
    /** Handouts of one job open at once, at most. */
    static final int MAX_OPEN_PER_JOB = 256;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A process that holds a handout: visible when its pid and start time match a process here. */
    record Owner(long pid, long start, boolean visible) {
        static Owner of(long pid, long start) {
            return new Owner(pid, start, pid > 0 && ProcessStart.alive(pid, start));
        }

        /** Gone: it was visible and is no longer (a process we cannot see is judged by its lease alone). */
        boolean gone() {
            return visible && !ProcessStart.alive(pid, start);
        }
    }

    /** A handout: ended once, by its owner, by the reaper or at close. */
    abstract static class Space {
        final String id = HexFormat.of().formatHex(bytes(12));
        final String job;
        final int rank;
        final Owner owner;
        final long deadline;
        final long bytes;

        Space(String job, int rank, Owner owner, long leaseSeconds, long bytes) {
            this.job = job;
            this.rank = rank;
            this.owner = owner;
            this.deadline = System.nanoTime() + leaseSeconds * 1_000_000_000L;
            this.bytes = bytes;
        }

        abstract String kind();

        /** Gives back what the handout holds; called exactly once (or {@link #expire} instead). */
        abstract void end();

        /** Ends a handout whose lease ran out while its owner may still be running. */
        void expire() {
            end();
        }
    }

    private final Map<String, Space> open = new ConcurrentHashMap<>();

    static byte[] bytes(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    /** Registers a handout; ends it at once when too many are open. */
    <S extends Space> S add(S s) {
        long ofJob = open.values().stream().filter(o -> o.job.equals(s.job)).count();
        if (open.size() >= MAX_OPEN || ofJob >= MAX_OPEN_PER_JOB) {
            s.end();
            throw StoreException.conflict((ofJob >= MAX_OPEN_PER_JOB ? ofJob + " shared-memory handouts of job " + s.job
                    + " are open (at most " + MAX_OPEN_PER_JOB : open.size() + " shared-memory handouts are open on this "
                    + "daemon (at most " + MAX_OPEN) + "); commit or release some");
        }
        open.put(s.id, s);
        return s;
    }

    /** Takes the handout {@code id} of {@code job} out of the registry (its caller ends it). */
    Space take(String job, String id) {
        Space s = open.get(id);
        if (s == null || !s.job.equals(job) || !open.remove(id, s)) {
            throw StoreException.notFound("no shared-memory handout " + id + " of job " + job
                    + " (committed, released, or ended because its owner is gone or its lease ran out)");
        }
        return s;
    }

    /** Ends handouts whose owner is gone or whose lease ran out; how many. */
    int reap() {
        long now = System.nanoTime();
        int ended = 0;
        for (Space s : List.copyOf(open.values())) {
            boolean gone = s.owner.gone();
            if ((gone || now - s.deadline > 0) && open.remove(s.id, s)) {
                if (gone) {
                    s.end(); // its mappings died with it
                } else {
                    s.expire();
                }
                ended++;
            }
        }
        return ended;
    }

    List<SharedSaves.Handout> describe(String job) {
        long now = System.nanoTime();
        List<SharedSaves.Handout> out = new ArrayList<>();
        for (Space s : open.values()) {
            if (job == null || s.job.equals(job)) {
                out.add(new SharedSaves.Handout(s.id, s.kind(), s.job, s.rank, s.owner.pid(), s.owner.visible(), s.bytes,
                        Math.max(0, (s.deadline - now) / 1_000_000_000L)));
            }
        }
        return out;
    }

    /** Ends every handout. */
    void endAll() {
        for (Space s : List.copyOf(open.values())) {
            if (open.remove(s.id, s)) {
                s.end();
            }
        }
    }
}
