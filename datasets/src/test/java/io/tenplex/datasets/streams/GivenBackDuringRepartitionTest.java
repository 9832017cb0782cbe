package io.tenplex.datasets.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A batch whose reader went away, given back while a re-partitioning moves the stream: its samples
 * are read once more, never lost with the buffer the new config replaces, never held twice. The
 * coordinator's steps are driven one by one so that the give-back lands between them.
 */
class GivenBackDuringRepartitionTest {
    private static final String A = "127.0.0.1:2001";
    private static final String B = "127.0.0.1:2002";

    private final InMemoryStreamPeers peers = new InMemoryStreamPeers();

    private StreamService daemon(String addr) {
        return peers.start(addr);
    }

    @AfterEach
    void stop() {
        peers.closeAll();
    }

    private static StreamConfig config(Policy p, List<String> ranks) {
        return new StreamConfig(new StreamSpec(p, 1000, 0, 64, 0, 3), ranks, List.of(), 0, false);
    }

    private static void pushTen(StreamService s, int rank) throws Exception {
        for (int i = 0; i < 10; i++) {
            assertEquals("accepted", s.push("j", rank, ByteBuffer.allocate(4).putInt(i).array(), 0, null).get().outcome());
        }
    }

    /** A batch of {@code n} from the rank at {@code s} (waiting up to {@code waitMillis} for it), counted by value. */
    private static Map<Integer, Integer> read(StreamService s, int rank, int n, long waitMillis) throws Exception {
        Map<Integer, Integer> reads = new TreeMap<>();
        s.read("j", rank, n, waitMillis, null).get(60, TimeUnit.SECONDS).samples()
                .forEach(x -> reads.merge(ByteBuffer.wrap(x).getInt(), 1, Integer::sum));
        return reads;
    }

    /** Ends production and checks that the rank at {@code s} holds nothing more. */
    private static void assertNothingLeft(StreamService s, int rank) throws Exception {
        s.endLocal("j");
        StreamBatch b = s.read("j", rank, 1000, 0, null).get();
        assertEquals(List.of(), b.samples());
        assertTrue(b.ended());
    }

    private static Map<Integer, Integer> everyOnce(int n) {
        Map<Integer, Integer> m = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            m.put(i, 1);
        }
        return m;
    }

    /** The export's samples, by rank, as the coordinator collects them. */
    private static Map<Integer, List<Sample>> export(StreamService s) {
        Map<Integer, List<Sample>> out = new TreeMap<>();
        s.exportAll("j", null, page -> page.forEach((r, l) -> out.computeIfAbsent(r, x -> new ArrayList<>()).addAll(l)));
        return out;
    }

    @Test
    void aBatchGivenBackAfterTheExport_isReadAgainUnderTheNewConfig() throws Exception {
        StreamService a = daemon(A);
        a.createLocal("j", config(Policy.FIFO, List.of(A, A)));
        pushTen(a, 1);
        StreamBatch taken = a.read("j", 1, 3, 0, null).get();
        assertEquals(3, taken.samples().size());
        Map<Integer, List<Sample>> moved = export(a);
        taken.unsent().run(); // its reader went away after the old buffers were emptied
        a.configure("j", config(Policy.FIFO, List.of(A)), true); // rank 1 is gone: one rank now
        a.importLocal("j", Map.of(0, moved.values().stream().flatMap(List::stream).toList()));
        a.unfreezeLocal("j");

        assertEquals(everyOnce(10), read(a, 0, 10, 0));
        assertNothingLeft(a, 0);
        assertEquals(0, a.memory().used());
    }

    @Test
    void aBatchGivenBackAfterItsRankMovedAway_goesToTheRanksNewDaemon() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        a.create("j", config(Policy.FIRO, List.of(A, A))).get();
        pushTen(a, 1);
        StreamBatch taken = a.read("j", 1, 4, 0, null).get();
        a.repartition("j", List.of(B, B)).get();
        Map<Integer, Integer> before = read(b, 0, 3, 0);
        before.putAll(read(b, 1, 3, 0));
        assertEquals(6, before.size());

        peers.refusedGiveBacks = new CountDownLatch(1);
        peers.failImports.add(B);
        taken.unsent().run(); // daemon A holds no rank now: it sends them to rank 1's daemon, which is away
        assertTrue(peers.refusedGiveBacks.await(30, TimeUnit.SECONDS));
        peers.failImports.remove(B); // the next try reaches it

        Map<Integer, Integer> all = read(b, 1, 4, 30_000);
        assertEquals(4, all.size());
        all.putAll(before);
        assertEquals(everyOnce(10), all);
        assertEquals(0, a.memory().used());
        assertNothingLeft(b, 0);
        assertNothingLeft(b, 1);
    }

    @Test
    void aReservoirBatchGivenBackWhileFrozen_isNotHeldTwiceWhenTheSamplesComeBack() throws Exception {
        StreamService a = daemon(A);
        a.createLocal("j", config(Policy.RESERVOIR, List.of(A)));
        pushTen(a, 0);
        StreamBatch taken = a.read("j", 0, 3, 0, null).get();
        Map<Integer, List<Sample>> moved = export(a);
        taken.unsent().run();
        a.importLocal("j", moved); // the roll-back of a re-partitioning that failed before any new config

        a.unfreezeLocal("j");

        RankStatus r = a.status("j").local().get(0);
        assertEquals(10, r.population());
        assertEquals(10, r.unseen());
        assertEquals(10 * 4, a.memory().used()); // each held sample's bytes counted once
    }

    @Test
    void aReservoirBatchDrawnAfterTheEnd_givenBackDuringARepartition_isReadAgain() throws Exception {
        StreamService a = daemon(A);
        a.createLocal("j", config(Policy.RESERVOIR, List.of(A, A)));
        pushTen(a, 1);
        a.endLocal("j"); // from now on a draw takes the sample out of the buffer
        StreamBatch taken = a.read("j", 1, 3, 0, null).get();
        Map<Integer, List<Sample>> moved = export(a);
        assertEquals(7, moved.get(1).size());
        taken.unsent().run();
        a.configure("j", config(Policy.RESERVOIR, List.of(A)).asEnded(), true);
        a.importLocal("j", Map.of(0, moved.get(1)));
        a.unfreezeLocal("j");

        assertEquals(everyOnce(10), read(a, 0, 10, 0));
        assertNothingLeft(a, 0);
    }

    @Test
    void aBatchGivenBackAfterTheStreamWasDeleted_leavesNoMemoryCounted() throws Exception {
        StreamService a = daemon(A);
        a.create("j", config(Policy.FIFO, List.of(A, A))).get();
        pushTen(a, 1);
        StreamBatch taken = a.read("j", 1, 3, 0, null).get();
        a.repartition("j", List.of(A)).get();
        a.deleteLocal("j");
        taken.unsent().run();
        assertEquals(0, a.memory().used());
    }

    @Test
    void aLargeBatchSentToTheRanksNewDaemonInPieces_arrivesOnce_whenASendFailsMidway() throws Exception {
        StreamService a = daemon(A);
        StreamService b = daemon(B);
        int size = 3 << 20; // five of them: three messages of at most 8 MiB
        a.create("j", new StreamConfig(new StreamSpec(Policy.FIFO, 100, 0, size, 0, 3), List.of(A, A), List.of(), 0,
                false)).get();
        for (int i = 0; i < 5; i++) {
            byte[] x = new byte[size];
            ByteBuffer.wrap(x).putInt(i);
            assertEquals("accepted", a.push("j", 1, x, 0, null).get().outcome());
        }
        StreamBatch taken = a.read("j", 1, 5, 0, null).get();
        assertEquals(5, taken.samples().size());
        a.repartition("j", List.of(B, B)).get();
        peers.refusedGiveBacks = new CountDownLatch(1);
        peers.giveBacksBeforeFailing.set(1); // the first message arrives, the second fails
        taken.unsent().run();
        assertTrue(peers.refusedGiveBacks.await(30, TimeUnit.SECONDS));

        assertEquals(everyOnce(5), read(b, 1, 5, 30_000)); // the rest came with the next try
        assertNothingLeft(b, 1);
        assertEquals(0, a.memory().used());
    }

    @Test
    void aReservoirSampleDrawnAfterTheEnd_isCarried_evenAfterAnEarlierExportWasRolledBack() throws Exception {
        StreamService a = daemon(A);
        a.createLocal("j", config(Policy.RESERVOIR, List.of(A, A)));
        pushTen(a, 1);
        a.importLocal("j", export(a)); // a re-partition rolled back before any new config
        a.unfreezeLocal("j");
        a.endLocal("j");
        Map<Integer, Integer> got = read(a, 1, 7, 0);
        StreamBatch taken = a.read("j", 1, 3, 0, null).get(); // the buffer is empty now
        assertEquals(Map.of(), export(a)); // the next re-partition has nothing to move
        taken.unsent().run();
        a.configure("j", config(Policy.RESERVOIR, List.of(A)).asEnded(), true);
        a.unfreezeLocal("j");
        got.putAll(read(a, 0, 3, 0));
        assertEquals(everyOnce(10), got);
        assertNothingLeft(a, 0);
        assertEquals(0, a.memory().used());
    }

    @Test
    void aFifoBatchCarriedToTheRanksNewBufferHere_isReadFirst() throws Exception {
        StreamService a = daemon(A);
        a.createLocal("j", config(Policy.FIFO, List.of(A, A)));
        pushTen(a, 1);
        StreamBatch taken = a.read("j", 1, 3, 0, null).get();
        Map<Integer, List<Sample>> moved = export(a);
        taken.unsent().run();
        a.configure("j", config(Policy.FIFO, List.of(A)), true);
        a.importLocal("j", Map.of(0, moved.get(1)));
        a.unfreezeLocal("j");
        List<Integer> order = new ArrayList<>();
        a.read("j", 0, 10, 0, null).get().samples().forEach(x -> order.add(ByteBuffer.wrap(x).getInt()));
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), order);
    }

    @Test
    void aReservoirSampleTwiceInOneGivenBackBatch_isCarriedOnce() throws Exception {
        java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        try {
            RankBuffer b = new RankBuffer(0, new StreamSpec(Policy.RESERVOIR, 4, 0, 64, 0, 3), timer);
            Sample x = new Sample(7, new byte[4], 0);
            assertEquals(RankBuffer.Push.ACCEPTED, b.push(x, 0).get());
            b.endReception(); // the draw takes it out: the drain does not move it
            assertEquals(List.of(x), b.read(1, 0).get().samples());
            x.read(); // as if a second draw had taken it again before it left (drawn with replacement)
            b.freezeAndDrain();
            b.retire();
            assertEquals(List.of(x), b.giveBack(List.of(x, x)));
        } finally {
            timer.shutdownNow();
        }
    }
}
