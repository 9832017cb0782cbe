package io.tenplex.jobs.tiers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.FakeCluster;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.ValueSpec;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

/** A job saved on a {@link FakeCluster} with one rank per worker ((2,1,2) on workers 0..3), sealed with some tiers. */
final class TierFixture {
    static final JobLayout PATHS = new JobLayout("j");
    static final ParallelConfig FROM = ParallelConfig.of(2, 1, 2);
    static final ObjectMapper JSON = new ObjectMapper();
    final Model model = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    final FakeCluster cluster;
    final int workers;
    final ParallelConfig from;
    final int perWorker;

    /** FROM, one rank on each of four workers. */
    TierFixture(FakeCluster cluster) {
        this(cluster, 4, FROM, 1);
    }

    /** {@code from} packed {@code perWorker} ranks to a worker over {@code workers} workers. */
    TierFixture(FakeCluster cluster, int workers, ParallelConfig from, int perWorker) {
        this.cluster = cluster;
        this.workers = workers;
        this.from = from;
        this.perWorker = perWorker;
    }

    /** Every worker flushes its generations into {@code root/worker-<w>} (L4) and recovers from there. */
    void flushEveryWorkerInto(java.nio.file.Path root) {
        java.nio.file.Path pattern = root.resolve("worker-" + io.tenplex.jobs.durable.SharedDurableDirs.WORKER);
        for (int w = 0; w < cluster.stores().size(); w++) {
            var dirs = io.tenplex.jobs.durable.SharedDurableDirs.of(pattern, cluster.store(w)).orElseThrow();
            var tier = new io.tenplex.jobs.durable.DurableTier(dirs.of(w), cluster.store(w),
                    cluster.jobs(w).generations(), Runnable::run, io.tenplex.jobs.durable.BlockRepair.NONE);
            cluster.jobs(w).generations().addListener(tier);
            cluster.jobs(w).setDurableCopies(dirs);
        }
    }

    static JsonNode config(ParallelConfig c, int perWorker) {
        return JSON.createObjectNode().put("tp", c.tp()).put("pp", c.pp()).put("dp", c.dp())
                .put("devicesPerWorker", perWorker).put("firstWorker", 0);
    }

    /** Saves {@code from} with random tensors and the model's values, and seals it as {@code step} with {@code tiers}. */
    Map<String, byte[]> saveAndSeal(long step, Tiers.Settings tiers, long seed) throws Exception {
        Ptc ptc = ConfigJson.ptc(model, config(from, perWorker), "test");
        for (int w = 0; w < workers; w++) {
            cluster.jobs(w).generations().tiers().set("j", tiers);
        }
        for (TensorStore s : cluster.stores()) {
            if (s.stat(PATHS.source()).isPresent()) {
                s.delete(PATHS.source()); // the next save replaces the last one
            }
        }
        Map<String, byte[]> full = SavedJobs.save(cluster.stores(), PATHS, ptc, seed);
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            for (ValueSpec v : model.values()) {
                Fixtures.putFile(cluster.store(ptc.device(rank).worker()), PATHS.saved(rank, v.key()).toString(),
                        (v.key() + " of rank " + rank).getBytes(StandardCharsets.UTF_8), true);
            }
        }
        for (int rank = 0; rank < ptc.worldSize(); rank++) {
            cluster.jobs(ptc.device(rank).worker()).seal("j", step, rank, ptc.worldSize(), config(from, perWorker),
                    Map.of()).get(30, TimeUnit.SECONDS);
        }
        return full;
    }

    /** Reconfigures generation {@code step} to {@code to} (coordinated by worker 0) and waits for the end. */
    Reconfiguration reconfigure(long step, JsonNode to) throws Exception {
        Reconfiguration c = cluster.jobs(0).reconfigure(request(step, to));
        c.finished().get(60, TimeUnit.SECONDS);
        return c;
    }

    /** The request to reconfigure generation {@code step} to {@code to}. */
    ReconfigureRequest request(long step, JsonNode to) {
        return new ReconfigureRequest("j", ModelSpecJson.write(model), null, to, OptionalLong.of(step),
                false, OptionalLong.empty(), cluster.daemons(), -1, OptionalLong.empty(), OptionalLong.of(60_000), null);
    }

    /** Every new shard of {@code to} is bit-identical to sharding {@code full} directly. */
    void assertLoaded(JsonNode to, Map<String, byte[]> full) {
        Ptc toPtc = ConfigJson.ptc(model, to, "test");
        var want = ReferenceInterpreter.shard(toPtc, full);
        for (int rank = 0; rank < toPtc.worldSize(); rank++) {
            TensorStore store = cluster.store(toPtc.device(rank).worker());
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(store, PATHS.loaded(rank, e.getKey()).toString()),
                        "rank " + rank + " " + e.getKey());
            }
        }
    }
}
