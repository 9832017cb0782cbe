package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.reconfigure.PeerSource;
import io.tenplex.jobs.reconfigure.StagingSink;
import io.tenplex.jobs.reconfigure.StoreSource;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.transform.ExecutionFailedException;
import io.tenplex.transform.ExecutionReport;
import io.tenplex.transform.Executor;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three daemons (store + REST server each, one per worker) on loopback: a plan is executed by every
 * destination worker, local pieces copied in memory, remote pieces fetched from peers; the staged
 * shards equal sharding the tensors directly under the new configuration.
 */
class MultiDaemonExecutionIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final JobLayout PATHS = new JobLayout("j");
    private final List<TensorStore> stores = new ArrayList<>();
    private final List<RestServer> servers = new ArrayList<>();
    private final Map<Integer, InetSocketAddress> daemons = new HashMap<>();
    private final ExecutorService pool = Executors.newFixedThreadPool(4);
    private PeerClient client;

    @BeforeEach
    void start() throws Exception {
        for (int w = 0; w < 3; w++) {
            stores.add(new TensorStore(new Allocator(512L << 20)));
            servers.add(null);
            restart(w);
        }
        client = new PeerClient(4, null);
    }

    private void restart(int worker) throws InterruptedException {
        RestServer s = new RestServer(stores.get(worker), null);
        daemons.put(worker, s.start("127.0.0.1", 0));
        servers.set(worker, s);
    }

    @AfterEach
    void stop() {
        client.close();
        pool.shutdownNow();
        servers.forEach(s -> {
            if (s != null) {
                s.close();
            }
        });
        stores.forEach(TensorStore::close); // fails if staging or reads leaked memory
    }

    @AfterAll
    static void noLeaks() {
        NettyLeaks.assertNone();
    }

    private static Ptc ptc(ParallelConfig c, int perWorker, int firstWorker) {
        return ptc(GPT, c, perWorker, firstWorker);
    }

    private static Ptc ptc(MegatronLayout.Shape shape, ParallelConfig c, int perWorker, int firstWorker) {
        List<Device> devices = new ArrayList<>();
        for (Device d : Ptc.packedDevices(c.worldSize(), perWorker)) {
            devices.add(new Device(d.worker() + firstWorker, d.local()));
        }
        return new Ptc(MegatronLayout.model(shape, c.pp()), c, RankLayout.MEGATRON,
                StageMap.uniform(shape.layers(), c.pp()), devices);
    }

    /** Saves every rank's shards into the daemon of its worker. */
    private Map<String, byte[]> save(Ptc from) {
        return SavedJobs.save(stores, PATHS, from, 99);
    }

    private List<ExecutionReport> execute(Plan plan, Ptc to, String id) throws Exception {
        List<ExecutionReport> reports = new ArrayList<>();
        PeerSource peers = new PeerSource(new io.tenplex.server.jobs.NettyRangeReads(client), daemons, PATHS,
                Duration.ofSeconds(20));
        for (int w : to.devices().stream().map(Device::worker).distinct().sorted().toList()) {
            int worker = w;
            StagingSink sink = new StagingSink(stores.get(w), PATHS, id);
            try {
                reports.add(new Executor(new StoreSource(stores.get(w), w, PATHS, peers), pool, 8)
                        .run(plan, s -> s.destDevice().worker() == worker, sink));
            } catch (ExecutionFailedException e) {
                sink.abort();
                throw e;
            }
        }
        return reports;
    }

    private void assertStaged(Ptc to, Map<String, byte[]> full, String id) {
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            TensorStore store = stores.get(to.device(rank).worker());
            for (var e : want.get(rank).entrySet()) {
                try (DataRef ref = store.openTensor(PATHS.staged(id, rank, e.getKey()))) {
                    ByteBuffer got = ByteBuffer.allocate((int) ref.size());
                    ref.copyTo(0, ref.size(), got);
                    assertArrayEquals(e.getValue().data(), got.array(), "rank " + rank + " " + e.getKey());
                }
            }
        }
    }

    @Test
    void tpPpAndDpChange_acrossTwoWorkers_isByteExact() throws Exception {
        Ptc from = ptc(ParallelConfig.of(2, 2, 2), 4, 0);
        Ptc to = ptc(ParallelConfig.of(4, 1, 2), 4, 0);
        Map<String, byte[]> full = save(from);
        Plan plan = Planner.plan(from, to);
        List<ExecutionReport> r = execute(plan, to, "p1");
        assertStaged(to, full, "p1");
        long remote = r.stream().mapToLong(ExecutionReport::remoteBytes).sum();
        long aliased = r.stream().mapToLong(ExecutionReport::aliasedRemoteBytes).sum();
        assertEquals(plan.report().interWorker(), remote + aliased, "fetched, or shared from a replica fetched once");
        assertTrue(remote > 0 && aliased > 0, r.toString());
    }

    /** Shards of 1 MiB and more whose sizes are not page multiples (1,200,000 bytes and the like). */
    @Test
    void shardsOfSizesThatAreNotPageMultiples_areStagedExactly_andNothingLeaks() throws Exception {
        MegatronLayout.Shape odd = MegatronLayout.Shape.gpt(2, 600, 8, 1000, 16);
        Ptc from = ptc(odd, ParallelConfig.of(2, 1, 2), 2, 0);
        Ptc to = ptc(odd, ParallelConfig.of(1, 2, 2), 2, 1);
        assertTrue(from.shards(0).stream().anyMatch(s -> new io.tenplex.ptc.TensorMeta(s.spec().dtype(), s.shape())
                .byteSize() >= (1 << 20) && new io.tenplex.ptc.TensorMeta(s.spec().dtype(), s.shape()).byteSize() % 4096 != 0));
        Map<String, byte[]> full = SavedJobs.save(stores, PATHS, from, 7);
        Plan plan = Planner.plan(from, to);
        execute(plan, to, "odd");
        assertStaged(to, full, "odd");
    }

    @Test
    void redeploymentToADisjointWorker_fetchesEverythingFromPeers() throws Exception {
        Ptc from = ptc(ParallelConfig.of(2, 2, 2), 4, 0);
        Ptc to = ptc(ParallelConfig.of(1, 2, 2), 4, 2); // four ranks on worker 2
        Map<String, byte[]> full = save(from);
        Plan plan = Planner.plan(from, to);
        List<ExecutionReport> r = execute(plan, to, "p2");
        assertStaged(to, full, "p2");
        assertEquals(0, r.get(0).localBytes());
        assertEquals(plan.report().interWorker(), r.get(0).remoteBytes() + r.get(0).aliasedRemoteBytes());
        assertEquals(r.get(0).remoteBytes(), r.get(0).aliasedRemoteBytes(), "two data-parallel replicas per stage on "
                + "worker 2: each fetched once");
    }

    @Test
    void peerDown_withoutReplica_aborts_savedStateIntact_retryAfterRestartSucceeds() throws Exception {
        Ptc from = ptc(ParallelConfig.of(2, 2, 2), 4, 0);
        Ptc to = ptc(ParallelConfig.of(4, 1, 2), 4, 0);
        Map<String, byte[]> full = save(from);
        long saved1 = stores.get(1).allocator().usedBytes();
        servers.get(1).close(); // stage 1 lives only on worker 1
        Plan plan = Planner.plan(from, to);
        ExecutionFailedException e = assertThrows(ExecutionFailedException.class, () -> execute(plan, to, "p3"));
        assertTrue(e.getMessage().contains("failed on every replica"), e.getMessage());
        assertTrue(stores.get(0).stat(StorePath.parse("/job/j/save/0")).isPresent());
        assertEquals(saved1, stores.get(1).allocator().usedBytes());
        restart(1);
        execute(plan, to, "p4");
        assertStaged(to, full, "p4");
    }
}
