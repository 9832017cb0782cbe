package io.tenplex.jobs.tiers;

import static io.tenplex.jobs.tiers.TierFixture.PATHS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.store.StorePath;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The streaming parity rebuild (L3) during a recovery: four simulated daemons, (T,P,D) = (4,1,1) one
 * rank each (every rank's tensors exist nowhere else), groups of 3 with one parity block (group
 * {0, 1, 2}, parity on worker 3), every worker flushing into {@code root/worker-<w>} (L4). Worker 1
 * is lost; rank 1 is rebuilt on worker 0 while the survivors take (2,1,3). The parity reads past the
 * middle of rank 1's block are held, so the rebuild stops half-way: tensors solved by then are read
 * from {@code replicas/10/1.streamed} before the rank is published.
 */
class StreamedRebuildTest {
    private static final Tiers.Settings K3M1_L4 = new Tiers.Settings(0, 3, 1, 2);
    private static final JobLayout REPLICAS = new JobLayout("j", JobLayout.replicasDir(10), "load");

    @TempDir
    Path root;
    private final FakeCluster cluster = new FakeCluster(4);
    private final TierFixture job = new TierFixture(cluster, 4, ParallelConfig.of(4, 1, 1), 1);
    private final Set<StorePath> served = ConcurrentHashMap.newKeySet();
    private final CompletableFuture<Void> release = new CompletableFuture<>();

    @BeforeEach
    void wire() {
        job.flushEveryWorkerInto(root);
        cluster.client().onRangeRead(served::add);
    }

    @AfterEach
    void close() {
        release.complete(null);
        cluster.close(); // fails if a rebuild, a stream or a restore leaked memory
    }

    @Test
    void tensorSolvedEarly_isServedBeforeItsRankIsSolved_andItsStreamedTreeGoesAtCommit() throws Exception {
        Map<String, byte[]> full = saved(11);
        Reconfiguration c = recoverHalfWay();
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isEmpty(), "rank 1 is not published yet");
        assertFalse(c.finished().isDone(), "the change waits for the rest of rank 1");
        release.complete(null);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("rebuilt from parity on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(), full);
        assertStreamedTreeGone();
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isPresent(), "rank 1 published");
        SealManifest sealed = sealed();
        assertEquals(sealed.tensors(), SealManifest.describe(cluster.store(0), PATHS.replica(10, 1), 1, 10).tensors(),
                "rank 1's tree keeps every tensor once the streamed tree is gone");
    }

    /**
     * The rebuild fails after some tensors were streamed and read: rank 1 comes from worker 1's durable
     * copy, the streamed tensors stay as they were for their readers, the change commits with exactly
     * the saved bytes, and the streamed tree goes.
     */
    @Test
    void rebuildFailingAfterSomeTensorsWereStreamed_fallsBackToTheDurableCopy_exactly() throws Exception {
        Map<String, byte[]> full = saved(12);
        Reconfiguration c = recoverHalfWay();
        cluster.client().failRangeReadsBelow(PATHS.parities(10));
        release.complete(null);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.COMMITTED, c.state(), String.valueOf(c.describe()));
        assertEquals("durable copy read on worker 0 (worker 1 lost)", c.describe().sources().get(1));
        job.assertLoaded(onSurvivors(), full);
        assertStreamedTreeGone();
        assertEquals(sealed().tensors(), SealManifest.describe(cluster.store(0), PATHS.replica(10, 1), 1, 10).tensors());
    }

    /** No level serves rank 1 after some tensors were streamed: the change aborts and the streamed tree goes. */
    @Test
    void rebuildFailingAfterStreaming_andDurableCopyDamaged_abortsAndRemovesTheStreamedTree() throws Exception {
        saved(13);
        flipMiddleByte(root.resolve("worker-1/jobs/j/10/blocks.pack"));
        Reconfiguration c = recoverHalfWay();
        cluster.client().failRangeReadsBelow(PATHS.parities(10));
        release.complete(null);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.ABORTED, c.state());
        assertTrue(c.error().contains("rebuilding from parity failed"), c.error());
        assertStreamedTreeGone();
        assertTrue(cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isEmpty(), "nothing of rank 1 published");
        for (int w : new int[] {0, 2, 3}) {
            assertTrue(cluster.store(w).stat(PATHS.load()).isEmpty(), "worker " + w + " loaded nothing");
        }
    }

    /** A part refuses to prepare while rank 1 streams: the change aborts; the streamed tree goes once the rebuild ends. */
    @Test
    void changeAbortedWhileStreaming_removesTheStreamedTreeOnceTheRebuildEnds() throws Exception {
        saved(14);
        cluster.client().refusePrepare(cluster.address(2));
        Reconfiguration c = recoverHalfWay();
        release.complete(null);
        c.finished().get(60, TimeUnit.SECONDS);
        assertEquals(Reconfiguration.State.ABORTED, c.state());
        await(() -> cluster.store(0).stat(PATHS.replicaManifest(10, 1)).isPresent(), "rank 1 published");
        assertStreamedTreeGone();
    }

    /** Starts the recovery with rank 1's parity held past the middle of its block; returns once a part read a streamed tensor. */
    private Reconfiguration recoverHalfWay() throws Exception {
        SealManifest sealed = sealed();
        long length = BlockLayout.of(java.util.List.of(sealed)).length();
        long hold = BlockLayout.of(java.util.List.of(sealed)).segments().stream()
                .mapToLong(s -> s.offset() + s.item().size()).filter(end -> end >= length / 2).min().orElseThrow();
        assertTrue(hold < length, "rank 1's block has tensors past its middle");
        cluster.client().setUnreachable(cluster.address(1), true);
        cluster.client().holdRangeReadsBelow(PATHS.parities(10), release, hold);
        Reconfiguration c = cluster.jobs(0).reconfigure(job.request(10, onSurvivors()));
        String streamed = REPLICAS.streamedRank(1) + "/";
        await(() -> served.stream().anyMatch(p -> p.toString().startsWith(streamed)),
                "a part read a tensor of " + streamed);
        return c;
    }

    private void assertStreamedTreeGone() {
        await(() -> cluster.store(0).stat(REPLICAS.streamedRank(1)).isEmpty()
                && cluster.store(0).stat(REPLICAS.streamedList(1)).isEmpty(), "the streamed tree of rank 1 removed");
    }

    /** Saves and seals generation 10, and waits until its parity and every durable copy are in place. */
    private Map<String, byte[]> saved(long seed) throws Exception {
        Map<String, byte[]> full = job.saveAndSeal(10, K3M1_L4, seed);
        for (int w = 0; w < 4; w++) {
            cluster.jobs(w).erasureParity().encoded("j", 10).get(60, TimeUnit.SECONDS);
            int worker = w;
            await(() -> cluster.jobs(worker).generations().tiers().levels("j", 10).contains(Tiers.DURABLE),
                    "worker " + w + " flushed generation 10");
        }
        return full;
    }

    /** Rank 1's seal manifest, as worker 1 wrote it. */
    private SealManifest sealed() throws Exception {
        return TierFixture.JSON.readValue(SmallFiles.read(cluster.store(1), PATHS.sealManifest(10, 1)).orElseThrow(),
                SealManifest.class);
    }

    /** (2,1,3) on the three survivors of worker 1, two devices each. */
    private static JsonNode onSurvivors() {
        var devices = TierFixture.JSON.createArrayNode();
        for (int w : new int[] {0, 2, 3}) {
            devices.add(TierFixture.JSON.createArrayNode().add(w).add(0));
            devices.add(TierFixture.JSON.createArrayNode().add(w).add(1));
        }
        var c = TierFixture.JSON.createObjectNode().put("tp", 2).put("pp", 1).put("dp", 3);
        c.set("devices", devices);
        return c;
    }

    private static void await(BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L); // polling with a deadline
        }
        assertTrue(done.getAsBoolean(), what);
    }

    private static void flipMiddleByte(Path file) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            long at = f.length() / 2;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xff);
        }
    }
}
