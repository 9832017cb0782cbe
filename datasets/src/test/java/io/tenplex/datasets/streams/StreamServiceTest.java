package io.tenplex.datasets.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StoreException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Three daemons' stream services joined by in-memory peers: routing, ends and re-partitioning. */
class StreamServiceTest {
    private final InMemoryStreamPeers peers = new InMemoryStreamPeers();
    private final List<StreamService> services = new ArrayList<>();

    private StreamService daemon(int port) {
        StreamService s = new StreamService(peers);
        s.setSelf("127.0.0.1", port);
        peers.daemons.put("127.0.0.1:" + port, s);
        services.add(s);
        return s;
    }

    @AfterEach
    void stop() {
        services.forEach(StreamService::close);
    }

    private static byte[] bytes(int i) {
        return ByteBuffer.allocate(4).putInt(i).array();
    }

    /** Pushes samples 0..n-1 round robin through {@code via}, each to its rank's daemon. */
    private void pushAll(StreamService via, String job, int from, int n) throws Exception {
        for (int i = from; i < from + n; i++) {
            int rank = via.pick(job, null);
            StreamService owner = peers.daemons.get(via.owner(job, rank));
            assertEquals("accepted", owner.push(job, rank, bytes(i), 0, null).get().outcome());
        }
    }

    /** Reads every rank until its stream ends; counts how often each sample was read. */
    private Map<Integer, Integer> readToEnd(String job, int batch) throws Exception {
        Map<Integer, Integer> reads = new HashMap<>();
        StreamConfig c = services.get(0).config(job);
        for (int rank = 0; rank < c.dp(); rank++) {
            StreamService owner = peers.daemons.get(c.ranks().get(rank));
            StreamBatch b;
            do {
                b = owner.read(job, rank, batch, 0, null).get();
                b.samples().forEach(s -> reads.merge(ByteBuffer.wrap(s).getInt(), 1, Integer::sum));
            } while (!b.ended());
        }
        return reads;
    }

    private void repartition_readsEveryUnseenSampleExactlyOnce(Policy p) throws Exception {
        StreamService a = daemon(1001);
        StreamService b = daemon(1002);
        daemon(1003);
        a.create("j", new StreamConfig(new StreamSpec(p, 1000, p == Policy.FIFO ? 0 : 10, 64, 0, 3),
                List.of("127.0.0.1:1001", "127.0.0.1:1002"), List.of(), 0, false)).get();
        pushAll(b, "j", 0, 300);
        Map<Integer, Integer> early = new HashMap<>();
        for (int rank = 0; rank < 2; rank++) {
            StreamService owner = rank == 0 ? a : b;
            owner.read("j", rank, 20, 0, null).get().samples()
                    .forEach(s -> early.merge(ByteBuffer.wrap(s).getInt(), 1, Integer::sum));
        }
        b.repartition("j", List.of("127.0.0.1:1003", "127.0.0.1:1001", "127.0.0.1:1003")).get();
        assertEquals(300 - 40, services.stream().mapToInt(s -> s.status("j").local().stream()
                .mapToInt(RankStatus::population).sum()).sum());
        pushAll(a, "j", 300, 30);
        a.end("j").get();
        Map<Integer, Integer> late = readToEnd("j", 7);
        late.forEach((k, v) -> early.merge(k, v, Integer::sum));
        assertEquals(330, early.size());
        assertTrue(early.values().stream().allMatch(v -> v == 1), early.toString());
    }

    @Test
    void fifo_repartitionFromTwoToThreeRanks_readsEverySampleExactlyOnce() throws Exception {
        repartition_readsEveryUnseenSampleExactlyOnce(Policy.FIFO);
    }

    @Test
    void firo_repartitionFromTwoToThreeRanks_readsEverySampleExactlyOnce() throws Exception {
        repartition_readsEveryUnseenSampleExactlyOnce(Policy.FIRO);
    }

    @Test
    void reservoir_repartition_losesNoUnseenSample_andKeepsSeenOnesSeen() throws Exception {
        StreamService a = daemon(1001);
        StreamService b = daemon(1002);
        a.create("r", new StreamConfig(new StreamSpec(Policy.RESERVOIR, 100, 5, 64, 0, 3),
                List.of("127.0.0.1:1001", "127.0.0.1:1002"), List.of(), 0, false)).get();
        pushAll(a, "r", 0, 200);
        a.read("r", 0, 10, 0, null).get();
        int seen = a.status("r").local().get(0).seen();
        a.repartition("r", List.of("127.0.0.1:1002")).get();
        RankStatus only = b.status("r").local().get(0);
        assertEquals(200, only.population());
        assertEquals(seen, only.seen());
        a.end("r").get();
        Map<Integer, Integer> reads = readToEnd("r", 9);
        assertEquals(200, reads.size()); // none lost
    }

    @Test
    void closesOfEveryProducer_endProductionEverywhere() throws Exception {
        StreamService a = daemon(1001);
        StreamService b = daemon(1002);
        a.create("c", new StreamConfig(new StreamSpec(Policy.FIFO, 10, 0, 64, 2, 3),
                List.of("127.0.0.1:1001", "127.0.0.1:1002"), List.of(), 0, false)).get();
        assertEquals(1, a.close("c").get());
        assertTrue(!b.status("c").ended());
        assertEquals(2, a.close("c").get());
        assertTrue(b.status("c").ended());
        assertTrue(b.read("c", 1, 1, 0, null).get().ended());
    }

    /**
     * While a re-partition gives out the new config, a daemon that already has it may relay a push
     * for a new rank to a daemon that still has the old one: there that rank is not held (the relay
     * answers "push again"), not a bad rank; a client's own request for it still is.
     */
    @Test
    void aRankBeyondThisDaemonsConfig_isNotHeldHere_whileAClientsRequestForItIsRefused() throws Exception {
        StreamService a = daemon(1001);
        StreamService b = daemon(1002);
        a.create("g", new StreamConfig(new StreamSpec(Policy.FIFO, 10, 0, 64, 0, 3),
                List.of("127.0.0.1:1001", "127.0.0.1:1002"), List.of(), 0, false)).get();
        assertTrue(a.holds("g", 0) && !a.holds("g", 1));
        assertTrue(!b.holds("g", 2) && !b.holds("g", -1));
        assertThrows(IllegalArgumentException.class, () -> b.owner("g", 2));
    }

    @Test
    void closesCountedOnRankZerosDaemon_surviveARepartitionCoordinatedElsewhere() throws Exception {
        StreamService a = daemon(1001);
        StreamService b = daemon(1002);
        b.create("m", new StreamConfig(new StreamSpec(Policy.FIFO, 10, 0, 64, 2, 3),
                List.of("127.0.0.1:1001", "127.0.0.1:1002"), List.of(), 0, false)).get();
        a.close("m").get(); // rank 0's daemon counts
        b.repartition("m", List.of("127.0.0.1:1002")).get();
        assertEquals(1, b.config("m").closes());
        assertEquals(2, b.close("m").get());
        assertTrue(b.status("m").ended());
    }

    @Test
    void badInput_isRefused_andNothingChanges() throws Exception {
        StreamService a = daemon(1001);
        a.create("x", new StreamConfig(new StreamSpec(Policy.FIFO, 10, 0, 4, 0, 3), List.of("127.0.0.1:1001"),
                List.of(), 0, false)).get();
        StoreException big = assertThrows(StoreException.class, () -> a.push("x", 0, new byte[5], 0, null));
        assertEquals(StoreException.Kind.TOO_LARGE, big.kind());
        assertThrows(IllegalArgumentException.class, () -> a.push("x", 1, new byte[1], 0, null));
        assertThrows(IllegalArgumentException.class, () -> a.read("x", 0, 0, 0, null));
        assertThrows(IllegalArgumentException.class, () -> new StreamSpec(Policy.FIRO, 10, 10, 4, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new StreamSpec(Policy.FIRO, 1 << 22, 0, 8 << 20, 0, 1));
        assertEquals(0, a.status("x").local().get(0).population());
        assertThrows(java.util.concurrent.ExecutionException.class, () -> a.create("x", a.config("x")).get());
    }
}
