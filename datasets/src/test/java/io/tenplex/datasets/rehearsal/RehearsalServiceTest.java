package io.tenplex.datasets.rehearsal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RehearsalServiceTest {
    private static final RehearsalConfig CONFIG = new RehearsalConfig(2, 6, 2, 8, 5);

    private static FakeRehearsalPeers fourDaemons() {
        FakeRehearsalPeers peers = new FakeRehearsalPeers();
        for (int d = 0; d < 4; d++) {
            RehearsalService s = peers.add("d" + d);
            s.configure("j", CONFIG);
            List<Sample> mine = new ArrayList<>();
            for (int i = 0; i < 2 + d; i++) {
                mine.add(RankBufferTest.sample(i % 2, d * 100 + i));
            }
            s.update("j", d, mine);
        }
        return peers;
    }

    private static int id(Sample s) {
        byte[] t = s.tuple();
        return (t[t.length - 3] & 0xff) | (t[t.length - 2] & 0xff) << 8;
    }

    @Test
    void sample_global_reachesEveryDaemon_local_onlyItsOwnRank() {
        FakeRehearsalPeers peers = fourDaemons();
        RehearsalService d0 = peers.daemons.get("d0");
        Set<Integer> global = new HashSet<>();
        Set<Integer> local = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            List<Sample> g = d0.sample("j", 0, 3, true).join();
            assertEquals(3, g.size());
            g.forEach(s -> global.add(id(s)));
            d0.sample("j", 0, 3, false).join().forEach(s -> local.add(id(s)));
        }
        assertEquals(14, global.size(), "2 + 3 + 4 + 5 representatives on four daemons: " + global);
        assertEquals(Set.of(0, 1), local);
    }

    @Test
    void repartition_fourToTwo_thenBackToFour_keepsEveryRepresentativeAndTheBalance() throws Exception {
        FakeRehearsalPeers peers = fourDaemons();
        RehearsalService d1 = peers.daemons.get("d1");
        RehearsalService.Repartitioned r = d1.repartition("j", Map.of(0, "d0", 1, "d2"));
        assertEquals(2, r.ranks());
        assertEquals(14, r.representatives());
        assertEquals(Map.of(), peers.daemons.get("d1").status("j").ranks(), "d1 serves no rank now");
        assertArrayEquals(new int[] {4, 3}, peers.daemons.get("d0").status("j").ranks().get(0));
        assertArrayEquals(new int[] {4, 3}, peers.daemons.get("d2").status("j").ranks().get(1));
        Set<Integer> ids = new HashSet<>();
        for (String d : List.of("d0", "d2")) {
            for (int[] counts : peers.daemons.get(d).status("j").ranks().values()) {
                assertEquals(7, counts[0] + counts[1]);
            }
            for (int i = 0; i < 100; i++) {
                peers.daemons.get(d).sample("j", d.equals("d0") ? 0 : 1, 7, false).join().forEach(s -> ids.add(id(s)));
            }
        }
        assertEquals(14, ids.size(), "every representative survives, none twice");
        peers.daemons.get("d3").repartition("j", Map.of(0, "d0", 1, "d1", 2, "d2", 3, "d3"));
        long total = peers.daemons.values().stream().mapToLong(s -> s.status("j").ranks().values().stream()
                .mapToInt(c -> c[0] + c[1]).sum()).sum();
        assertEquals(14, total);
        assertEquals(peers.daemons.values().stream().mapToLong(s -> s.status("j").bytes()).sum(),
                peers.daemons.values().stream().mapToLong(RehearsalService::usedBytes).sum());
    }

    @Test
    void repartition_aDaemonFailsToPrepare_nothingChanges() {
        FakeRehearsalPeers peers = fourDaemons();
        peers.daemons.get("d2").drop("j");
        peers.daemons.get("d2").configure("j", new RehearsalConfig(2, 6, 2, 8, 6)); // refuses the moves' config
        assertThrows(StoreException.class, () -> peers.daemons.get("d0").repartition("j", Map.of(0, "d1", 1, "d2")));
        assertArrayEquals(new int[] {1, 1}, peers.daemons.get("d0").status("j").ranks().get(0));
        assertArrayEquals(new int[] {2, 1}, peers.daemons.get("d1").status("j").ranks().get(1));
    }

    @Test
    void repartition_sameTargetsAgain_afterUpdatesOnADaemonThatKeptNoRank_movesThemToo() throws Exception {
        FakeRehearsalPeers peers = fourDaemons();
        RehearsalService d0 = peers.daemons.get("d0");
        d0.repartition("j", Map.of(0, "d0"));
        peers.daemons.get("d3").update("j", 3, List.of(RankBufferTest.sample(0, 999)));
        d0.repartition("j", Map.of(0, "d0"));
        assertEquals(Map.of(), peers.daemons.get("d3").status("j").ranks(), "d3 gave its new representative up");
        Set<Integer> ids = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            d0.sample("j", 0, 15, false).join().forEach(s -> ids.add(id(s)));
        }
        assertEquals(12, ids.size(), "6 + 6 kept of 15 (S = 6 per class), none twice: " + ids);
    }

    @Test
    void update_badInput_isRefusedAndChangesNothing() {
        RehearsalService s = new RehearsalService(RehearsalPeers.NONE, 10);
        assertThrows(StoreException.class, () -> s.update("j", 0, List.of()));
        s.configure("j", CONFIG);
        assertEquals(StoreException.Kind.CONFLICT, assertThrows(StoreException.class,
                () -> s.configure("j", new RehearsalConfig(3, 6, 2, 8, 5))).kind());
        assertTrue(!s.configure("j", new RehearsalConfig(2, 6, 2, 8, 5)), "the same configuration again: no change");
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, assertThrows(StoreException.class,
                () -> s.update("j", 0, List.of(Tuples.bytesSample(0, new byte[64])))).kind());
        assertEquals(0, s.usedBytes());
    }
}
