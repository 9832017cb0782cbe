package io.tenplex.datasets.streams;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One rank's training buffer, thread-safe: a push that the policy cannot take now waits (no thread
 * blocked) until it can or its wait runs out, then is answered {@link Push#FULL} (the producer
 * retries: nothing is dropped); a read waits the same way for a batch. While frozen (a
 * re-partitioning) pushes are answered {@link Push#MOVED} and reads get an empty batch. A waiting
 * push or read whose caller went away ({@code gone} completed: its connection closed) is withdrawn:
 * the push is not stored ({@link Push#WITHDRAWN}; the producer pushes again), the read takes no
 * batch. A push may carry a producer-chosen id: a push whose id was stored lately is answered
 * {@link Push#DUPLICATE} and not stored again, and one whose id still waits takes the earlier one's
 * place (that one is answered {@link Push#WITHDRAWN}), so a retry is stored exactly once however its
 * first try ended. Futures are completed outside the lock.
 */
final class RankBuffer {
    /** How a push ended. */
    enum Push { ACCEPTED, FULL, MOVED, ENDED, WITHDRAWN, DUPLICATE }

    /** A batch's samples (borrowed bytes) and whether the stream is over for this rank. */
    record Batch(List<Sample> samples, boolean ended) {
    }

    /** The most producers that may wait at one buffer; more are answered FULL at once. */
    static final int MAX_WAITING = 4096;
    /** The most sample bytes that waiting producers may hold at one buffer; beyond, FULL at once. */
    static final long MAX_WAITING_BYTES = 64L << 20;

    private record Waiter<T>(CompletableFuture<T> answer, Sample sample, int n, String id) {
    }

    private final int rank;
    private final StreamMemory memory;
    private final StreamSpec spec;
    private final TrainingBuffer buf;
    private final ScheduledExecutorService timer;
    private final ArrayDeque<Waiter<Push>> puts = new ArrayDeque<>();
    private final ArrayDeque<Waiter<Batch>> reads = new ArrayDeque<>();
    private final RankCounts counts = new RankCounts();
    private final PushIds ids = new PushIds();
    private boolean frozen;
    private final FrozenReturns returns;
    private long waitingBytes;

    RankBuffer(int rank, StreamSpec spec, ScheduledExecutorService timer) {
        this(rank, spec, timer, StreamMemory.unlimited());
    }

    /** @param memory the daemon's budget: this buffer gives back the bytes of every sample that leaves it */
    RankBuffer(int rank, StreamSpec spec, ScheduledExecutorService timer, StreamMemory memory) {
        this.memory = memory;
        this.rank = rank;
        this.spec = spec;
        this.buf = TrainingBuffer.of(spec, spec.seed() * 31 + rank);
        this.returns = new FrozenReturns(spec.policy());
        this.timer = timer;
    }

    int rank() {
        return rank;
    }

    /** Offers a sample; waits up to {@code waitMillis} while the policy cannot take it. */
    CompletableFuture<Push> push(Sample s, long waitMillis) {
        return push(s, waitMillis, null);
    }

    /**
     * Offers a sample; waits up to {@code waitMillis} while the policy cannot take it, unless
     * {@code gone} (may be null) completes first: then the push is withdrawn, the sample not stored.
     */
    CompletableFuture<Push> push(Sample s, long waitMillis, CompletableFuture<?> gone) {
        return push(s, null, waitMillis, gone);
    }

    /** As {@link #push(Sample, long, CompletableFuture)}, with the producer's id of the sample (null: none). */
    CompletableFuture<Push> push(Sample s, String id, long waitMillis, CompletableFuture<?> gone) {
        List<Runnable> done = new ArrayList<>();
        Waiter<Push> w = new Waiter<>(new CompletableFuture<>(), s, 0, id);
        synchronized (this) {
            if (ids.stored(id)) {
                return CompletableFuture.completedFuture(Push.DUPLICATE);
            }
            if (frozen || buf.receptionOver()) {
                return CompletableFuture.completedFuture(frozen ? Push.MOVED : Push.ENDED);
            }
            supersede(id, done);
            if (puts.isEmpty() && buf.canPut()) {
                accept(s, id);
                pump(done);
                w.answer.complete(Push.ACCEPTED);
            } else if (waitMillis <= 0 || puts.size() >= MAX_WAITING
                    || waitingBytes + s.data().length > MAX_WAITING_BYTES) {
                counts.refused++;
                w.answer.complete(Push.FULL);
            } else {
                puts.addLast(w);
                waitingBytes += s.data().length;
            }
        }
        done.forEach(Runnable::run);
        if (!w.answer.isDone()) {
            timer.schedule(() -> expire(puts, w, Push.FULL), waitMillis, TimeUnit.MILLISECONDS);
            if (gone != null) {
                gone.whenComplete((v, t) -> withdraw(puts, w, Push.WITHDRAWN));
            }
        }
        return w.answer;
    }

    /** A waiting push of the same id (its producer retried: it gave up on it) is withdrawn (under the lock). */
    private void supersede(String id, List<Runnable> done) {
        if (id == null) {
            return;
        }
        for (Iterator<Waiter<Push>> it = puts.iterator(); it.hasNext();) {
            Waiter<Push> earlier = it.next();
            if (id.equals(earlier.id)) {
                it.remove();
                waitingBytes -= earlier.sample.data().length;
                counts.withdrawn++;
                done.add(() -> earlier.answer.complete(Push.WITHDRAWN));
                return;
            }
        }
    }

    /** A batch of {@code n} samples, waiting up to {@code waitMillis} for one (then an empty batch). */
    CompletableFuture<Batch> read(int n, long waitMillis) {
        return read(n, waitMillis, null);
    }

    /**
     * A batch of {@code n} samples, waiting up to {@code waitMillis} for one (then an empty batch),
     * unless {@code gone} (may be null) completes first: then the read is withdrawn and takes none.
     */
    CompletableFuture<Batch> read(int n, long waitMillis, CompletableFuture<?> gone) {
        List<Runnable> done = new ArrayList<>();
        Waiter<Batch> w = new Waiter<>(new CompletableFuture<>(), null, n, null);
        synchronized (this) {
            if (!frozen && reads.isEmpty() && (buf.canTake(n) || buf.drained())) {
                Batch b = take(n);
                pump(done);
                w.answer.complete(b);
            } else if (frozen || waitMillis <= 0 || reads.size() >= MAX_WAITING) {
                w.answer.complete(new Batch(List.of(), false));
            } else {
                reads.addLast(w);
            }
        }
        done.forEach(Runnable::run);
        if (!w.answer.isDone()) {
            timer.schedule(() -> expire(reads, w, new Batch(List.of(), false)), waitMillis, TimeUnit.MILLISECONDS);
            if (gone != null) {
                gone.whenComplete((v, t) -> withdraw(reads, w, new Batch(List.of(), false)));
            }
        }
        return w.answer;
    }

    /** Takes a waiter whose caller went away out of its queue, if it still waits (not refused: nobody asks). */
    private <T> void withdraw(ArrayDeque<Waiter<T>> queue, Waiter<T> w, T answer) {
        synchronized (this) {
            if (!queue.remove(w)) {
                return; // answered meanwhile: a batch that cannot be written goes back through its unsent hook
            }
            waitingBytes -= w.sample == null ? 0 : w.sample.data().length;
            counts.withdrawn++;
        }
        w.answer.complete(answer);
    }

    private <T> void expire(ArrayDeque<Waiter<T>> queue, Waiter<T> w, T answer) {
        synchronized (this) {
            if (!queue.remove(w)) {
                return; // answered meanwhile
            }
            if (w.sample != null) {
                counts.refused++;
                waitingBytes -= w.sample.data().length;
            }
        }
        w.answer.complete(answer);
    }

    /** Production is over: thresholds lift, waiting readers are served, waiting producers told. */
    void endReception() {
        List<Runnable> done = new ArrayList<>();
        synchronized (this) {
            buf.endReception();
            drainWaiters(puts, Push.ENDED, done);
            pump(done);
        }
        done.forEach(Runnable::run);
    }

    /**
     * Freezes the buffer and takes every sample out of it (with their read counts), for a
     * re-partitioning; waiting producers are told to push again ({@link Push#MOVED}), waiting
     * readers get an empty batch.
     */
    List<Sample> freezeAndDrain() {
        List<Runnable> done = new ArrayList<>();
        List<Sample> all;
        synchronized (this) {
            frozen = true;
            drainWaiters(puts, Push.MOVED, done);
            drainWaiters(reads, new Batch(List.of(), false), done);
            all = buf.drainAll();
            all.forEach(s -> memory.release(s.data().length));
            returns.drained(all);
        }
        done.forEach(Runnable::run);
        return all;
    }

    /** Adds samples moved here by a re-partitioning, beyond the capacity if need be (none is lost). */
    synchronized void restore(List<Sample> samples) {
        for (Sample s : samples) {
            buf.restore(s);
            memory.force(s.data().length);
            counts.pushed++;
        }
    }

    /**
     * Takes back a batch that never reached its reader (its connection closed): its samples are
     * read no more and held again, not counted delivered. A frozen buffer (a re-partitioning took
     * its samples meanwhile) holds them apart until the unfreeze (after any samples moved back in, so
     * a Reservoir finds its own by id), or until a new config takes them over ({@link #retire}). A
     * retired buffer takes nothing: the samples are answered (reads undone), for the caller to place.
     * A frozen or retired Reservoir only undoes the read of a sample its last drain took out.
     */
    List<Sample> giveBack(List<Sample> batch) {
        List<Runnable> done = new ArrayList<>();
        List<Sample> out = new ArrayList<>();
        synchronized (this) {
            for (int i = batch.size() - 1; i >= 0; i--) {
                Sample s = batch.get(i);
                int reads = s.reads();
                s.unread();
                if (!returns.take(s, frozen, out)) {
                    takeBack(s, reads);
                }
            }
            if (!returns.retired()) {
                counts.batch(-batch.size());
            }
            if (!frozen && !returns.retired()) {
                pump(done);
            }
        }
        done.forEach(Runnable::run);
        java.util.Collections.reverse(out);
        return out;
    }

    /**
     * Takes samples given back to a buffer of the rank that a new config replaced (reads undone) as if
     * given back here: to a FIFO's front, by id for a Reservoir; serves what can be served.
     */
    void takeCarried(List<Sample> samples) {
        List<Runnable> done = new ArrayList<>();
        synchronized (this) {
            for (int i = samples.size() - 1; i >= 0; i--) {
                takeBack(samples.get(i), samples.get(i).reads() + 1);
            }
            if (!frozen) {
                pump(done);
            }
        }
        done.forEach(Runnable::run);
    }

    /** A given-back sample (its read undone; {@code reads} before that) into the buffer, unless still held. */
    private void takeBack(Sample s, int reads) {
        if (buf.giveBack(s)) {
            counts.left.remove(reads);
            memory.force(s.data().length);
        }
    }

    /**
     * A new config replaces this buffer: from now on it takes nothing back, and the samples given
     * back to it while frozen are answered, for the new config's buffers.
     */
    synchronized List<Sample> retire() {
        return returns.retire();
    }

    /** Lets producers and readers in again after a re-partitioning; serves what can be served. */
    void unfreeze() {
        List<Runnable> done = new ArrayList<>();
        synchronized (this) {
            frozen = false;
            returns.unfreeze().forEach(x -> takeBack(x, x.reads() + 1)); // counted now
            pump(done);
        }
        done.forEach(Runnable::run);
    }

    private <T> void drainWaiters(ArrayDeque<Waiter<T>> queue, T answer, List<Runnable> done) {
        for (Waiter<T> w : queue) {
            waitingBytes -= w.sample == null ? 0 : w.sample.data().length;
            done.add(() -> w.answer.complete(answer));
        }
        queue.clear();
    }

    /** Serves waiting producers and readers while the policy lets them (under the lock). */
    private void pump(List<Runnable> done) {
        boolean moved = true;
        while (moved) {
            moved = false;
            while (!puts.isEmpty() && buf.canPut()) {
                Waiter<Push> w = puts.removeFirst();
                waitingBytes -= w.sample.data().length;
                accept(w.sample, w.id);
                done.add(() -> w.answer.complete(Push.ACCEPTED));
                moved = true;
            }
            while (!reads.isEmpty() && (buf.canTake(reads.peekFirst().n) || buf.drained())) {
                Waiter<Batch> w = reads.removeFirst();
                Batch b = take(w.n);
                done.add(() -> w.answer.complete(b));
                moved = true;
            }
        }
    }

    private void accept(Sample s, String id) {
        buf.put(s);
        ids.remember(id);
        counts.pushed++;
        noteLeft(true);
    }

    private Batch take(int n) {
        List<Sample> b = buf.drained() ? List.of() : buf.take(n);
        counts.batch(b.size());
        noteLeft(false);
        return new Batch(b, buf.drained());
    }

    private void noteLeft(boolean evictions) {
        for (Iterator<Sample> it = buf.left.iterator(); it.hasNext();) {
            Sample s = it.next();
            memory.release(s.data().length);
            counts.left.add(s.reads());
            counts.evicted += evictions ? 1 : 0;
        }
        buf.left.clear();
    }

    /** Whether it holds a sample (a reader can free memory). */
    synchronized boolean holdsAny() {
        return buf.size() > 0;
    }

    synchronized RankStatus status() {
        return counts.status(rank, spec, buf, puts.size(), reads.size(), frozen);
    }
}
