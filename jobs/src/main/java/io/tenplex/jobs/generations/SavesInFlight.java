package io.tenplex.jobs.generations;

import io.tenplex.store.StoreException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The seals and commits of each job in flight on this daemon, and the removals of a job
 * ({@code tenplex rm}) that exclude them. A save {@link #enter}s, writes the job's tree and its
 * generations, tells the other daemons, and leaves ({@link Pass#close}); any number of saves of a job
 * may be in flight at once. A removal first marks the job ({@link #prepare}, on every daemon of the
 * cluster before any removes): new saves of the job wait from then on, and notices of seals on other
 * daemons are refused ({@link #enterNotice}); it waits until the saves in flight have left, runs alone
 * ({@link #excluding}), and lets the saves that waited go on, against the clean job. So a seal is
 * wholly before a removal (and removed with the job, here and wherever it was told) or wholly after
 * it: no generation is listed complete whose tree the removal took, and none completes from a notice
 * of a seal the removal took.
 */
public final class SavesInFlight {
    /** How long a removal waits for the saves in flight. */
    public static final Duration DEFAULT_WAIT = Duration.ofSeconds(30);
    /** How long a prepared removal holds back the job's saves if it never comes (its coordinator is gone). */
    public static final Duration PREPARED_LEASE = Duration.ofSeconds(90);

    /** A save in flight; closing it leaves (once). */
    public interface Pass extends AutoCloseable {
        @Override
        void close();
    }

    /** What a removal does while no save of the job is in flight. */
    @FunctionalInterface
    public interface Exclusive<T> {
        T run() throws IOException, InterruptedException;
    }

    /** One job's saves in flight (what each does, for a refusal to name) and its removal's mark. */
    private static final class Job {
        final List<String> saves = new ArrayList<>();
        /** Until when (System.nanoTime) a prepared removal holds saves back; 0: not marked. */
        long markedUntil;
        /** The removal itself runs. */
        boolean removing;

        boolean marked(long now) {
            return removing || markedUntil != 0 && markedUntil - now > 0;
        }
    }

    /** Guarded by this. */
    private final Map<String, Job> jobs = new HashMap<>();

    /**
     * Enters a save of {@code job} ({@code what} names it, e.g. {@code the seal of rank 0 of step 10}),
     * once a removal of the job that is prepared or runs here has ended.
     *
     * @throws StoreException unavailable when the thread is interrupted while it waits
     */
    public synchronized Pass enter(String job, String what) {
        Job j = jobs.computeIfAbsent(job, k -> new Job());
        while (j.marked(System.nanoTime())) {
            try {
                if (j.removing) {
                    wait();
                } else {
                    TimeUnit.NANOSECONDS.timedWait(this, j.markedUntil - System.nanoTime());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreException(StoreException.Kind.UNAVAILABLE, "interrupted while " + what + " of job "
                        + job + " waited for the job's removal");
            }
            j = jobs.computeIfAbsent(job, k -> new Job());
        }
        return admit(job, j, what);
    }

    /**
     * Enters the notice of a seal on another daemon, refused while a removal of the job is prepared or
     * runs here: the seal it tells of is removed with the job there (it never waits, so no two daemons
     * wait for each other).
     *
     * @throws StoreException conflict while the job is being removed here
     */
    public synchronized Pass enterNotice(String job, String what) {
        Job j = jobs.computeIfAbsent(job, k -> new Job());
        if (j.marked(System.nanoTime())) {
            throw StoreException.conflict("job " + job + " is being removed on this daemon (tenplex rm): "
                    + what + " is refused; seal again once the removal has ended");
        }
        return admit(job, j, what);
    }

    private Pass admit(String job, Job j, String what) {
        j.markedUntil = 0; // a lapsed mark
        j.saves.add(what);
        boolean[] left = {false};
        return () -> leave(job, j, what, left);
    }

    private synchronized void leave(String job, Job j, String what, boolean[] left) {
        if (left[0]) {
            return;
        }
        left[0] = true;
        j.saves.remove(what);
        forgetIfIdle(job, j);
        notifyAll();
    }

    private void forgetIfIdle(String job, Job j) {
        if (j.saves.isEmpty() && !j.marked(System.nanoTime())) {
            jobs.remove(job, j);
        }
    }

    /**
     * Prepares a removal of {@code job}: marks it (for {@link #PREPARED_LEASE} at most), so that new
     * saves wait and notices are refused, and waits (at most {@code wait}) until the saves in flight have
     * left; {@link #excluding} or {@link #release} ends the mark.
     *
     * @throws StoreException conflict naming the saves still in flight after {@code wait} (the mark is taken back)
     */
    public synchronized void prepare(String job, Duration wait) throws InterruptedException {
        long end = System.nanoTime() + wait.toNanos();
        Job j = jobs.computeIfAbsent(job, k -> new Job());
        while (j.removing) { // another removal of the job runs: it goes first
            waitUntil(end, job, "another removal of job " + job + " is running");
            j = jobs.computeIfAbsent(job, k -> new Job());
        }
        j.markedUntil = Math.max(1, System.nanoTime() + PREPARED_LEASE.toNanos());
        try {
            while (!j.saves.isEmpty()) {
                waitUntil(end, job, String.join(", ", j.saves) + " of job " + job + (j.saves.size() == 1 ? " is"
                        : " are") + " still in flight after " + wait.toMillis() + " ms");
            }
        } catch (StoreException | InterruptedException e) {
            j.markedUntil = 0;
            forgetIfIdle(job, j);
            notifyAll();
            throw e;
        }
    }

    /** Takes back a prepared removal's mark (the removal was refused elsewhere): the saves that wait go on. */
    public synchronized void release(String job) {
        Job j = jobs.get(job);
        if (j != null && !j.removing) {
            j.markedUntil = 0;
            forgetIfIdle(job, j);
            notifyAll();
        }
    }

    /**
     * Runs {@code removal} of {@code job} while no save of it is in flight here: prepares it first (or
     * again), then runs it alone and ends the mark.
     *
     * @throws StoreException conflict naming the saves still in flight after {@code wait} (nothing was run)
     */
    public <T> T excluding(String job, Duration wait, Exclusive<T> removal) throws IOException, InterruptedException {
        Job j;
        synchronized (this) {
            prepare(job, wait);
            j = jobs.get(job);
            j.removing = true;
        }
        try {
            return removal.run();
        } finally {
            synchronized (this) {
                j.removing = false;
                j.markedUntil = 0;
                forgetIfIdle(job, j);
                notifyAll();
            }
        }
    }

    private void waitUntil(long end, String job, String why) throws InterruptedException {
        long left = end - System.nanoTime();
        if (left <= 0) {
            throw StoreException.conflict("job " + job + " cannot be removed now: " + why + "; nothing was removed, "
                    + "run tenplex rm " + job + " again");
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
    }
}
