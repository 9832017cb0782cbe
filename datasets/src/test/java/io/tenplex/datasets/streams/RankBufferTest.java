package io.tenplex.datasets.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RankBufferTest {
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private RankBuffer buffer(Policy p, int capacity, int threshold) {
        return new RankBuffer(0, new StreamSpec(p, capacity, threshold, 64, 0, 1), timer);
    }

    private static Sample sample(long id) {
        return new Sample(id, new byte[] {(byte) id}, 0);
    }

    @Test
    void pushToAFullBuffer_waits_andIsAcceptedWhenABatchMakesRoom() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 2, 0);
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(0), 0).get());
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(1), 0).get());
        CompletableFuture<RankBuffer.Push> waiting = b.push(sample(2), 60_000);
        assertFalse(waiting.isDone());
        assertEquals(1, b.status().waitingProducers());
        assertEquals(1, b.read(1, 0).get().samples().size());
        assertEquals(RankBuffer.Push.ACCEPTED, waiting.get(10, TimeUnit.SECONDS));
    }

    @Test
    void pushWhoseWaitRunsOut_isRefusedAsFull_andCounted() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 1, 0);
        b.push(sample(0), 0).get();
        assertEquals(RankBuffer.Push.FULL, b.push(sample(1), 0).get());
        assertEquals(RankBuffer.Push.FULL, b.push(sample(2), 20).get(10, TimeUnit.SECONDS));
        assertEquals(2, b.status().refused());
        assertEquals(1, b.status().population());
    }

    @Test
    void readWaitsForABatch_andEndsWhenProductionEndsAndTheBufferIsEmpty() throws Exception {
        RankBuffer b = buffer(Policy.FIRO, 10, 3);
        CompletableFuture<RankBuffer.Batch> read = b.read(2, 60_000);
        for (long i = 0; i < 4; i++) {
            b.push(sample(i), 0).get();
        }
        assertFalse(read.isDone()); // 4 < threshold 3 + 2
        b.push(sample(4), 0).get();
        assertEquals(2, read.get(10, TimeUnit.SECONDS).samples().size());
        CompletableFuture<RankBuffer.Batch> rest = b.read(5, 60_000);
        b.endReception();
        RankBuffer.Batch last = rest.get(10, TimeUnit.SECONDS);
        assertEquals(3, last.samples().size());
        assertTrue(last.ended());
        assertEquals(RankBuffer.Push.ENDED, b.push(sample(9), 0).get());
    }

    @Test
    void freeze_hasWaitersPushAgain_andHandsOverEverySampleWithItsReads() throws Exception {
        RankBuffer b = buffer(Policy.RESERVOIR, 2, 0);
        b.push(sample(0), 0).get();
        b.push(sample(1), 0).get();
        b.read(1, 0).get();
        b.push(sample(2), 0).get(); // evicts the seen one
        CompletableFuture<RankBuffer.Push> waiting = b.push(sample(4), 60_000);
        List<Sample> all = b.freezeAndDrain();
        assertEquals(RankBuffer.Push.MOVED, waiting.get(10, TimeUnit.SECONDS));
        assertEquals(2, all.size());
        assertEquals(RankBuffer.Push.MOVED, b.push(sample(5), 0).get());
        assertTrue(b.read(1, 0).get().samples().isEmpty());
        assertEquals(java.util.Map.of("1", 1L), b.status().readsLeft());
    }

    @Test
    void waitingPushAndRead_whoseCallerWentAway_areWithdrawn_nothingStoredNorTaken() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 1, 0);
        b.push(sample(0), 0).get();
        CompletableFuture<Void> producerGone = new CompletableFuture<>();
        CompletableFuture<RankBuffer.Push> waiting = b.push(sample(1), 60_000, producerGone);
        producerGone.complete(null);
        assertEquals(RankBuffer.Push.WITHDRAWN, waiting.get(10, TimeUnit.SECONDS));
        assertEquals(List.of(0L), b.read(1, 0).get().samples().stream().map(Sample::id).toList());
        assertEquals(0, b.status().population(), "1 never stored");
        CompletableFuture<Void> readerGone = new CompletableFuture<>();
        CompletableFuture<RankBuffer.Batch> read = b.read(1, 60_000, readerGone);
        readerGone.complete(null);
        assertTrue(read.get(10, TimeUnit.SECONDS).samples().isEmpty());
        b.push(sample(2), 0).get();
        assertEquals(List.of(2L), b.read(1, 0).get().samples().stream().map(Sample::id).toList(), "the next reader gets it");
        RankStatus st = b.status();
        assertEquals(2, st.withdrawn());
        assertEquals(0, st.refused());
        assertEquals(0, st.waitingProducers() + st.waitingReaders());
    }

    @Test
    void reservoirBatchReturnedAsCopies_byARelayingDaemon_isUnseenAgain_notDuplicated() throws Exception {
        RankBuffer b = buffer(Policy.RESERVOIR, 4, 0);
        b.push(sample(0), 0).get();
        Sample drawn = b.read(1, 0).get().samples().get(0);
        assertEquals(1, b.status().seen());
        b.giveBack(List.of(new Sample(drawn.id(), drawn.data(), drawn.reads()))); // as it comes back over the wire
        RankStatus st = b.status();
        assertEquals(1, st.population());
        assertEquals(1, st.unseen());
        assertEquals(0, st.delivered());
    }

    @Test
    void pushRetriedWithTheIdOfAStoredSample_isADuplicate_andNotStoredAgain() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 4, 0);
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(0), "p-0", 0, null).get());
        assertEquals(RankBuffer.Push.DUPLICATE, b.push(sample(1), "p-0", 0, null).get());
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(2), "p-1", 0, null).get());
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(3), null, 0, null).get());
        assertEquals(RankBuffer.Push.ACCEPTED, b.push(sample(4), null, 0, null).get()); // no id: never a duplicate
        assertEquals(List.of(0L, 2L, 3L, 4L), b.read(4, 0).get().samples().stream().map(Sample::id).toList());
    }

    @Test
    void storedWhileItsProducerGivesUp_thenRetried_isStoredOnce() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 1, 0);
        b.push(sample(0), "p-0", 0, null).get();
        CompletableFuture<Void> gone = new CompletableFuture<>();
        CompletableFuture<RankBuffer.Push> first = b.push(sample(1), "p-1", 60_000, gone);
        assertEquals(1, b.read(1, 0).get().samples().size()); // room: the waiting push is stored...
        gone.complete(null); // ...as its producer goes away, too late to withdraw it
        assertEquals(RankBuffer.Push.ACCEPTED, first.get());
        assertEquals(RankBuffer.Push.DUPLICATE, b.push(sample(2), "p-1", 60_000, null).get(10, TimeUnit.SECONDS));
        b.endReception();
        assertEquals(List.of(1L), b.read(4, 0).get().samples().stream().map(Sample::id).toList());
    }

    @Test
    void retryWhileTheFirstTryStillWaits_takesItsPlace_andIsStoredOnce() throws Exception {
        RankBuffer b = buffer(Policy.FIFO, 1, 0);
        b.push(sample(0), 0).get();
        CompletableFuture<RankBuffer.Push> first = b.push(sample(1), "p-1", 60_000, null);
        CompletableFuture<RankBuffer.Push> retry = b.push(sample(2), "p-1", 60_000, null);
        assertEquals(RankBuffer.Push.WITHDRAWN, first.get(10, TimeUnit.SECONDS));
        assertEquals(1, b.status().waitingProducers());
        b.read(1, 0).get();
        assertEquals(RankBuffer.Push.ACCEPTED, retry.get(10, TimeUnit.SECONDS));
        b.endReception();
        assertEquals(List.of(2L), b.read(4, 0).get().samples().stream().map(Sample::id).toList());
    }

    @Test
    void pushIds_rememberTheLastStoredOnes() {
        PushIds ids = new PushIds();
        for (int i = 0; i <= PushIds.REMEMBERED; i++) {
            ids.remember("p-" + i);
        }
        assertFalse(ids.stored("p-0"), "the oldest is forgotten");
        assertTrue(ids.stored("p-1"));
        assertTrue(ids.stored("p-" + PushIds.REMEMBERED));
        assertFalse(ids.stored(null));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> PushIds.check(""));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> PushIds.check("x".repeat(PushIds.MAX_CHARS + 1)));
    }
}
