package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.reconfigure.InDoubt;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.PeerParts;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The reconfiguration coordinator over the in-memory {@link FakeDaemonClient}: three simulated
 * daemons, no sockets. The old configuration lives on workers 0 and 1, the new one on 1 and 2.
 */
class CoordinatorTest {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final JobLayout PATHS = new JobLayout("j");
    private static final ParallelConfig A = ParallelConfig.of(2, 2, 2);
    private static final ParallelConfig B = ParallelConfig.of(4, 1, 2);
    private final ObjectMapper json = new ObjectMapper();
    private final Model model = MegatronLayout.model(GPT);
    private final FakeCluster cluster = new FakeCluster(3);

    @AfterEach
    void close() {
        cluster.close(); // fails if staging or reads leaked memory
    }

    private Ptc ptc(ParallelConfig c, int firstWorker) {
        return ConfigJson.ptc(model, config(c, firstWorker), "test");
    }

    private JsonNode config(ParallelConfig c, int firstWorker) {
        return json.createObjectNode().put("tp", c.tp()).put("pp", c.pp()).put("dp", c.dp()).put("devicesPerWorker", 4)
                .put("firstWorker", firstWorker);
    }

    private Map<String, byte[]> save(Ptc from) {
        Map<String, byte[]> full = SavedJobs.save(cluster.stores(), PATHS, from, 5);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            TensorStore store = cluster.store(from.device(rank).worker());
            for (ValueSpec v : model.values()) {
                Fixtures.putFile(store, PATHS.saved(rank, v.key()).toString(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), false);
            }
        }
        return full;
    }

    private ReconfigureRequest request(long preparedTimeoutMillis) {
        return new ReconfigureRequest("j", ModelSpecJson.write(model), config(A, 0), config(B, 1),
                OptionalLong.empty(), true, OptionalLong.of(120), cluster.daemons(), -1, OptionalLong.empty(),
                OptionalLong.of(preparedTimeoutMillis), null);
    }

    /**
     * Plan ahead sends the descriptions of the model and of the workers' addresses to the new
     * placement's daemons while the job trains, so the change itself does not send them (a megabyte per
     * daemon at GPT-3's shape) in its downtime; then the change as known ahead, so each daemon plans its
     * own part then, and the change only binds it (and commits the right bytes).
     */
    @Test
    void planAhead_sendsTheModelAndAddressesAhead_eachDaemonPlansItsPart_andTheChangeUsesThem() throws Exception {
        Map<String, byte[]> full = save(ptc(A, 0));
        ReconfigureRequest r = request(60_000);
        io.tenplex.jobs.reconfigure.PlanAhead ahead = cluster.jobs(0).planAhead(r);
        ahead.describedAhead().get(30, TimeUnit.SECONDS);
        String digest = io.tenplex.jobs.reconfigure.Descriptions.digest(io.tenplex.jobs.reconfigure.Descriptions
                .model(ahead.stored()));
        for (int w : new int[] {1, 2}) { // B's workers
            assertTrue(cluster.jobs(w).own().descriptions().get(digest) != null, "worker " + w);
            assertEquals(1, cluster.jobs(w).own().partsAhead().size(), "worker " + w + " planned its own part ahead");
            assertEquals(0, cluster.jobs(w).own().partsAhead().used());
        }
        assertTrue(cluster.jobs(0).own().descriptions().get(digest) == null, "worker 0 has no new rank: not sent");
        int sent = cluster.client().descriptionsSent(digest);
        assertEquals(2, sent);
        Map<String, Integer> ahead2 = cluster.client().descriptionsSent();
        assertEquals(2, ahead2.size(), "the model's and the workers' addresses' descriptions: " + ahead2);
        assertEquals(java.util.Set.of(2), java.util.Set.copyOf(ahead2.values()), ahead2.toString());
        cluster.jobs(0).planAhead(r).describedAhead().get(30, TimeUnit.SECONDS);
        assertEquals(ahead2, cluster.client().descriptionsSent(), "planned ahead again: not sent again");
        Reconfiguration c = cluster.jobs(0).reconfigure(r, ahead);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        Map<String, Integer> after = new HashMap<>(cluster.client().descriptionsSent());
        assertEquals(2, after.get(digest), "the change did not send the model again");
        for (int w : new int[] {1, 2}) {
            assertEquals(1, cluster.jobs(w).own().partsAhead().used(), "worker " + w + "'s change used its part planned ahead");
        }
        assertEquals(ahead2, Map.copyOf(after.entrySet().stream().filter(e -> ahead2.containsKey(e.getKey()))
                .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue))),
                "nor the addresses (the change names the digest sent ahead)");
        assertLoaded(full);
    }

    private Reconfiguration reconfigure(long preparedTimeoutMillis) throws Exception {
        ReconfigureRequest r = request(preparedTimeoutMillis);
        Reconfiguration c = cluster.jobs(0).reconfigure(r);
        c.finished().get(60, TimeUnit.SECONDS);
        return c;
    }

    private void assertLoaded(Map<String, byte[]> full) {
        Ptc to = ptc(B, 1);
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            TensorStore store = cluster.store(to.device(rank).worker());
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(store, "/job/j/load/" + rank + "/" + e.getKey()),
                        "rank " + rank + " " + e.getKey());
            }
            assertEquals("120", new String(SavedJobs.bytes(store, "/job/j/iter"), StandardCharsets.US_ASCII));
        }
    }

    private Map<String, byte[]> savedBytes() {
        Map<String, byte[]> out = new HashMap<>();
        for (int w = 0; w < 2; w++) {
            for (var e : cluster.store(w).walk(StorePath.parse("/job/j/save"), false)) {
                out.put(w + e.path().toString(), SavedJobs.bytes(cluster.store(w), e.path().toString()));
            }
        }
        return out;
    }

    /**
     * After an abort, a part still executing drops its staging when its execution ends (it is not cut
     * short): wait for every part of the plan to end, then nothing may be staged or loaded.
     */
    private void assertNothingStagedOrLoaded(String planId) throws Exception {
        for (int w = 0; w < 3; w++) {
            try {
                cluster.jobs(w).part("j", planId).prepared().get(60, TimeUnit.SECONDS);
            } catch (StoreException e) {
                assertEquals(StoreException.Kind.NOT_FOUND, e.kind()); // no part of the plan on this worker
            }
        }
        for (int w = 0; w < 3; w++) {
            TensorStore s = cluster.store(w);
            assertTrue(s.stat(StorePath.parse("/job/j/staging")).map(e -> e.children() == 0).orElse(true), "worker " + w);
            assertTrue(s.stat(StorePath.parse("/job/j/load")).isEmpty(), "worker " + w);
        }
    }

    /** Every daemon plans its own part: the descriptions travel once, the same bytes are committed. */
    @Test
    void plannedByEveryDaemon_commitsTheRightBytesEverywhere() throws Exception {
        Map<String, byte[]> full = save(ptc(A, 0));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.COMMITTED, r.state(), String.valueOf(r.describe()));
        assertLoaded(full);
        for (int w = 1; w < 3; w++) { // the new configuration's workers
            assertTrue(cluster.jobs(w).own().descriptions().missing(List.of(io.tenplex.jobs.reconfigure.Descriptions.digest(
                    io.tenplex.jobs.reconfigure.Descriptions.model(model)))).isEmpty(), "worker " + w + " keeps the model");
        }
    }

    /** A daemon that planned other choices (a version skew) aborts the change before anything is prepared. */
    @Test
    void aDaemonWithAnotherPlanDigest_abortsTheChange_nothingStagedOrLoaded() throws Exception {
        save(ptc(A, 0));
        Map<String, byte[]> before = savedBytes();
        cluster.client().skewPlanDigest(cluster.address(2));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.ABORTED, r.state(), String.valueOf(r.describe()));
        assertTrue(r.error().contains("planned the change differently") && r.error().contains("[2]"), r.error());
        assertNothingStagedOrLoaded(r.id());
        Map<String, byte[]> after = savedBytes();
        assertEquals(before.keySet(), after.keySet(), "the saved state stays");
        before.forEach((k, v) -> assertArrayEquals(v, after.get(k), k));
    }

    @Test
    void reconfigure_acrossThreeDaemons_commitsTheRightBytesEverywhere() throws Exception {
        Map<String, byte[]> full = save(ptc(A, 0));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.COMMITTED, r.state(), String.valueOf(r.describe()));
        assertLoaded(full);
        for (int w = 1; w < 3; w++) {
            assertEquals("committed", cluster.jobs(w).part("j", r.id()).status().state());
        }
    }

    /**
     * A part that cannot prepare aborts the others at once: with every read of the saved state held,
     * worker 1's part is aborted while it still waits for its bytes, not once it has moved them.
     */
    @Test
    void aPartFailsWhileAnotherMoves_theOtherIsAbortedBeforeItsBytesArrive() throws Exception {
        Ptc from = ConfigJson.ptc(model, json.createObjectNode().put("tp", 2).put("pp", 2).put("dp", 2)
                .put("devicesPerWorker", 8).put("firstWorker", 0), "test"); // every old rank on worker 0
        save(from);
        CompletableFuture<Void> release = new CompletableFuture<>();
        cluster.client().holdRangeReadsBelow(StorePath.parse("/job/j/save"), release);
        cluster.client().refusePrepareAtOnce(cluster.address(2));
        ReconfigureRequest r = new ReconfigureRequest("j", ModelSpecJson.write(model), json.createObjectNode().put("tp", 2)
                .put("pp", 2).put("dp", 2).put("devicesPerWorker", 8).put("firstWorker", 0), config(B, 1),
                OptionalLong.empty(), true, OptionalLong.of(120), cluster.daemons(), -1, OptionalLong.empty(),
                OptionalLong.of(60_000), null);
        Reconfiguration c = cluster.jobs(0).reconfigure(r);
        try {
            c.finished().get(30, TimeUnit.SECONDS); // ends while the reads are still held
            assertEquals(Reconfiguration.State.ABORTED, c.state(), String.valueOf(c.describe()));
            assertTrue(c.error().contains("refused to prepare"), c.error());
            io.tenplex.jobs.common.PartStatus held = cluster.jobs(1).part("j", c.id()).status();
            assertEquals("aborted", held.state());
            assertTrue(held.bytesDone() < held.bytesTotal(), held.toString());
        } finally {
            release.complete(null);
        }
        assertNothingStagedOrLoaded(c.id());
    }

    @Test
    void reconfigure_aPartRefusesPrepare_abortsEverywhere_andTheSourceStaysIntact() throws Exception {
        save(ptc(A, 0));
        Map<String, byte[]> before = savedBytes();
        cluster.client().refusePrepare(cluster.address(2));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.ABORTED, r.state());
        assertTrue(r.error().contains("refused to prepare"), r.error());
        assertEquals("aborted", cluster.jobs(1).part("j", r.id()).status().state());
        assertNothingStagedOrLoaded(r.id());
        Map<String, byte[]> after = savedBytes();
        assertEquals(before.keySet(), after.keySet());
        before.forEach((k, v) -> assertArrayEquals(v, after.get(k), k));
    }

    @Test
    void reconfigure_outOfHeapWhileSendingParts_abortsThePartsSent_andTheSourceStaysIntact() throws Exception {
        save(ptc(A, 0));
        Map<String, byte[]> before = savedBytes();
        cluster.client().failPostsWith(cluster.address(2), new OutOfMemoryError("Java heap space"));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.ABORTED, r.state(), String.valueOf(r.describe()));
        assertTrue(r.error().contains("the coordinator ran out of heap (Java heap space; maximum heap "), r.error());
        assertTrue(r.error().contains("every part sent was aborted"), r.error());
        // worker 1 lacked the descriptions: its part starts before the abort arrives (and is aborted),
        // or after it (and is refused: it never runs)
        String state;
        try {
            state = cluster.jobs(1).part("j", r.id()).status().state();
        } catch (StoreException e) {
            state = "never started";
        }
        assertTrue(state.equals("aborted") || state.equals("never started"), state);
        assertNothingStagedOrLoaded(r.id());
        Map<String, byte[]> after = savedBytes();
        assertEquals(before.keySet(), after.keySet());
        before.forEach((k, v) -> assertArrayEquals(v, after.get(k), k));
    }

    @Test
    void reconfigure_aDaemonUnreachable_abortsBeforeAnyPartStarts() throws Exception {
        save(ptc(A, 0));
        cluster.client().setUnreachable(cluster.address(1), true);
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.ABORTED, r.state());
        assertTrue(r.error().contains("daemon of worker 1 at"), r.error());
        assertTrue(r.error().contains("is unreachable"), r.error());
        assertEquals(0, cluster.jobs(2).kept("j"));
        assertNothingStagedOrLoaded(r.id());
    }

    @Test
    void reconfigure_aSourceRankOnEachDaemon_isListedAndRead() throws Exception {
        Ptc from = ptc(A, 0);
        Map<String, byte[]> full = save(from);
        assertEquals(2, from.devices().stream().map(d -> d.worker()).distinct().count());
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.COMMITTED, r.state(), String.valueOf(r.describe()));
        long remote = cluster.jobs(2).part("j", r.id()).status().remoteBytes();
        assertTrue(remote > 0, "worker 2 holds no old rank: everything it loads came from workers 0 and 1");
        assertLoaded(full);
    }

    @Test
    void inDoubt_theCoordinatorIsAsked_forItsOutcome() throws Exception {
        save(ptc(A, 0));
        Reconfiguration r = reconfigure(60_000);
        Map<Integer, String> addresses = Map.of(0, "127.0.0.1:7000", 1, "127.0.0.1:7001", 2, "127.0.0.1:7002");
        assertEquals("committed", new PeerParts("j", r.id(), addresses, "127.0.0.1:7000", r.id(), cluster.client())
                .coordinator());
        assertEquals(InDoubt.ABSENT, new PeerParts("j", r.id(), addresses, "127.0.0.1:7000", "p999", cluster.client())
                .coordinator());
        assertEquals("committed", new PeerParts("j", r.id(), addresses, "", "", cluster.client()).part(1));
        cluster.client().setUnreachable(cluster.address(0), true);
        assertEquals(InDoubt.UNREACHABLE, new PeerParts("j", r.id(), addresses, "127.0.0.1:7000", r.id(),
                cluster.client()).coordinator());
    }

    @Test
    void inDoubt_aPartWhoseCommitIsLost_commitsAfterAskingTheCommitPoint() throws Exception {
        Map<String, byte[]> full = save(ptc(A, 0));
        cluster.client().loseCommitsTo(cluster.address(2));
        Reconfiguration r = reconfigure(100);
        assertEquals(Reconfiguration.State.COMMITTED, r.state(), String.valueOf(r.describe()));
        PartRunner lost = cluster.jobs(2).part("j", r.id());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!lost.status().state().equals("committed")) {
            assertTrue(System.nanoTime() < deadline, "the part in doubt did not resolve: " + lost.status());
            java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L); // the part's own timer decides
        }
        assertLoaded(full);
    }

    @Test
    void registries_forgetAFinishedJobsEntries() throws Exception {
        save(ptc(A, 0));
        Reconfiguration r = reconfigure(60_000);
        assertEquals(Reconfiguration.State.COMMITTED, r.state());
        assertTrue(cluster.jobs(0).kept("j") > 0);
        assertTrue(cluster.jobs(1).kept("j") > 0);
        cluster.jobs(0).forget("j");
        assertEquals(0, cluster.jobs(0).kept("j"));
        cluster.advance(Jobs.RETENTION.plus(Duration.ofMinutes(1)));
        org.junit.jupiter.api.Assertions.assertThrows(io.tenplex.store.StoreException.class,
                () -> cluster.jobs(1).part("j", r.id())); // looking up prunes: expired
        assertEquals(0, cluster.jobs(1).kept("j"), "a finished job's parts go after the retention");
        org.junit.jupiter.api.Assertions.assertThrows(io.tenplex.store.StoreException.class,
                () -> cluster.jobs(2).part("j", r.id()));
        assertEquals(0, cluster.jobs(2).kept("j"));
    }
}
