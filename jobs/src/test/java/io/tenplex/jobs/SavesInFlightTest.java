package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.generations.SavesInFlight;
import io.tenplex.store.StoreException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Removals and the seals, commits and notices of seals they exclude, with threads and latches. */
class SavesInFlightTest {
    private static final Duration LONG = Duration.ofSeconds(30);
    private final SavesInFlight inFlight = new SavesInFlight();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<String> order = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    @Test
    void removal_waitsForTheSaveInFlight_andASaveThatComesMeanwhile_waitsForTheRemoval() throws Exception {
        SavesInFlight.Pass seal = inFlight.enter("j", "the seal of rank 0 of step 7");
        CountDownLatch removing = new CountDownLatch(1);
        CompletableFuture<Void> removal = CompletableFuture.runAsync(() -> run(() -> inFlight.excluding("j", LONG,
                () -> {
                    removing.countDown();
                    order.add("removed");
                    return null;
                })), pool);
        awaitPrepared("j");
        CompletableFuture<Void> later = CompletableFuture.runAsync(() -> {
            try (SavesInFlight.Pass p = inFlight.enter("j", "the seal of rank 0 of step 8")) {
                order.add("sealed after");
            }
        }, pool);
        assertFalse(removing.await(50, TimeUnit.MILLISECONDS), "the removal ran while a seal was in flight");
        order.add("sealed before");
        seal.close();
        removal.get(10, TimeUnit.SECONDS);
        later.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("sealed before", "removed", "sealed after"), order);
    }

    @Test
    void prepared_refusesNotices_holdsSavesBack_untilReleased() throws Exception {
        inFlight.prepare("j", LONG);
        StoreException e = assertThrows(StoreException.class, () -> inFlight.enterNotice("j", "the notice of step 7"));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("job j is being removed on this daemon"), e.getMessage());
        inFlight.enterNotice("other", "the notice of step 7").close(); // other jobs are not held back
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<Void> save = CompletableFuture.runAsync(() -> {
            try (SavesInFlight.Pass p = inFlight.enter("j", "the seal of rank 0 of step 8")) {
                entered.countDown();
            }
        }, pool);
        assertFalse(entered.await(50, TimeUnit.MILLISECONDS), "a save entered a prepared job");
        inFlight.release("j");
        save.get(10, TimeUnit.SECONDS);
        inFlight.enterNotice("j", "the notice of step 9").close();
    }

    @Test
    void saveStillInFlightAfterTheWait_refusesTheRemoval_namingIt_andNothingRuns() throws Exception {
        SavesInFlight.Pass commit = inFlight.enter("j", "the commit of shared-memory save s1 of rank 0 of step 7");
        StoreException e = assertThrows(StoreException.class, () -> inFlight.excluding("j", Duration.ofMillis(20),
                () -> order.add("removed")));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("the commit of shared-memory save s1 of rank 0 of step 7 of job j is still "
                + "in flight"), e.getMessage());
        assertTrue(order.isEmpty());
        inFlight.enter("j", "the seal of rank 1 of step 7").close(); // not held back after the refusal
        inFlight.enterNotice("j", "the notice of step 7").close();
        commit.close();
        commit.close(); // leaves once
        assertEquals(List.of(true), List.of(inFlight.excluding("j", LONG, () -> order.add("removed"))));
    }

    /** Waits until a removal of {@code job} holds its notices back (it has marked the job). */
    private void awaitPrepared(String job) throws InterruptedException {
        while (true) {
            try {
                inFlight.enterNotice(job, "a probe").close();
            } catch (StoreException marked) {
                return;
            }
            Thread.onSpinWait();
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }

    private interface Body {
        void run() throws Exception;
    }

    private static void run(Body b) {
        try {
            b.run();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
