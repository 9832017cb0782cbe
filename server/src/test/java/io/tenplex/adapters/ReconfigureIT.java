package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import io.tenplex.server.control.PartStatus;
import io.tenplex.server.jobs.JobsFixture;
import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler-facing API end to end on three daemons (one per worker, loopback): POST
 * reconfigure to one daemon, which coordinates; every worker stages its part; all commit; the new
 * generation appears under /job/j/load on every daemon. With a daemon down, it fails clearly and the
 * previous generation stays as it was.
 */
class ReconfigureIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final JobLayout PATHS = new JobLayout("j");
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private LoopbackDaemons cluster;
    private List<TensorStore> stores;
    private List<RestServer> servers;
    private List<JobsFixture> services;
    private Map<Integer, InetSocketAddress> daemons;
    private final Model model = MegatronLayout.model(GPT);

    @BeforeEach
    void start() throws Exception {
        cluster = new LoopbackDaemons(3, 512L << 20);
        stores = cluster.stores;
        servers = cluster.servers;
        services = cluster.services;
        daemons = cluster.daemons;
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @AfterAll
    static void noLeaks() {
        NettyLeaks.assertNone();
    }

    private Map<String, byte[]> save(Ptc from) {
        return cluster.save(PATHS, from, 5);
    }

    private String config(ParallelConfig c) {
        return "{\"tp\": " + c.tp() + ", \"pp\": " + c.pp() + ", \"dp\": " + c.dp() + ", \"devicesPerWorker\": 4}";
    }

    private JsonNode reconfigure(ParallelConfig a, ParallelConfig b, boolean withModel) throws Exception {
        return reconfigure(a, b, withModel, "", true);
    }

    private JsonNode reconfigure(ParallelConfig a, ParallelConfig b, boolean withModel, String extra, boolean withDaemons)
            throws Exception {
        StringBuilder d = new StringBuilder("{");
        daemons.forEach((w, addr) -> d.append(d.length() > 1 ? "," : "").append('"').append(w).append("\": \"127.0.0.1:")
                .append(addr.getPort()).append('"'));
        d.append('}');
        String body = "{" + (withModel ? "\"model\": " + ModelSpecJson.write(model) + ", " : "") + "\"from\": "
                + config(a) + ", \"to\": " + config(b) + (withDaemons ? ", \"daemons\": " + d : "") + ", \"step\": 120"
                + extra + "}";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base(0) + JobsFixture.PREFIX + "j/reconfigure"))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(202, r.statusCode(), r.body());
        String status = json.readTree(r.body()).get("status").asText();
        HttpResponse<String> done = http.send(HttpRequest.newBuilder(URI.create(base(0) + status + "?wait=true")).build(),
                HttpResponse.BodyHandlers.ofString());
        return json.readTree(done.body());
    }

    private String base(int w) {
        return "http://127.0.0.1:" + daemons.get(w).getPort();
    }

    private byte[] read(int worker, String path) {
        return SavedJobs.bytes(stores.get(worker), path);
    }

    private void assertLoaded(Ptc from, Ptc to, Map<String, byte[]> full) {
        assertLoaded(from, to, full, "120");
    }

    private void assertLoaded(Ptc from, Ptc to, Map<String, byte[]> full, String iter) {
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            int w = to.device(rank).worker();
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), read(w, "/job/j/load/" + rank + "/" + e.getKey()),
                        "rank " + rank + " " + e.getKey());
            }
            // rng_state comes from the old rank with the same tensor and pipeline coordinates (dp 0), else rank 0
            var c = to.layout().coord(rank, to.config());
            boolean same = c.tp() < from.config().tp() && c.pp() < from.config().pp();
            int src = same ? from.layout().rank(new io.tenplex.ptc.RankLayout.Coord(c.tp(), 0, c.pp()), from.config()) : 0;
            assertEquals("rng_state of rank " + src,
                    new String(read(w, "/job/j/load/" + rank + "/rng_state"), StandardCharsets.UTF_8));
            assertEquals(iter, new String(read(w, "/job/j/iter"), StandardCharsets.US_ASCII));
        }
    }

    @Test
    void finishedParts_areForgottenAfterTheirRetention() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        Map<String, byte[]> full = save(Ptc.packed(model, a, 4));
        services.forEach(j -> j.setPartRetention(Duration.ZERO)); // then twice the prepared timeout is the bound
        JsonNode r = reconfigure(a, b, true, ", \"preparedTimeoutMillis\": 100", true);
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
        String part = JobsFixture.PREFIX + "j/parts/" + r.get("plan").asText();
        long deadline = System.nanoTime() + 10_000_000_000L;
        for (int w = 0; w < 2; w++) { // the destination workers' daemons held the parts
            while (http.send(HttpRequest.newBuilder(URI.create(base(w) + part)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() != 404) {
                assertTrue(System.nanoTime() < deadline, "worker " + w + " still keeps its finished part");
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L); // polling a remote condition
            }
        }
    }

    @Test
    void reconfigure_commitsTheNewGenerationOnEveryDaemon() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        Ptc from = Ptc.packed(model, a, 4);
        Map<String, byte[]> full = save(from);
        JsonNode r = reconfigure(a, b, true);
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertEquals(r.at("/report/lowerBoundBytes").asLong(), r.at("/report/interWorkerBytes").asLong());
        assertTrue(r.at("/workers/0/bytesDone").asLong() > 0, r.toString());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
        assertTrue(stores.get(0).stat(StorePath.parse("/job/j/staging")).map(e -> e.children() == 0).orElse(true));
        // committing again is harmless
        String id = r.get("plan").asText();
        HttpResponse<byte[]> again = http.send(HttpRequest.newBuilder(URI.create(base(1) + JobsFixture.PREFIX + "j/parts/"
                + id + "/commit")).POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, again.statusCode());
        assertEquals("committed", PartStatus.parseFrom(again.body()).getState());
    }

    private HttpResponse<String> post(int worker, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base(worker) + JobsFixture.PREFIX + "j/" + path))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode generations(int worker) throws Exception {
        return json.readTree(http.send(HttpRequest.newBuilder(URI.create(base(worker) + JobsFixture.PREFIX
                + "j/generations")).build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    @Test
    void save_isCompleteWhenEveryRankSealed_andReconfigureReadsTheCompleteGeneration() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        Ptc from = Ptc.packed(model, a, 4);
        Map<String, byte[]> full = save(from);
        String sealBody = "{\"world\": 8, \"config\": " + config(a) + "}";
        for (int rank = 0; rank < 7; rank++) {
            HttpResponse<String> r = post(from.device(rank).worker(), "saves/100/ranks/" + rank, sealBody);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(false, json.readTree(r.body()).get("complete").asBoolean(), r.body());
        }
        for (int w = 0; w < 3; w++) { // incomplete: nobody sees it as the current generation
            assertTrue(generations(w).get("current").isNull(), generations(w).toString());
            assertEquals(7, generations(w).at("/generations/0/sealedRanks").size());
        }
        // bad seals change nothing
        assertEquals(400, post(1, "saves/100/ranks/8", sealBody).statusCode());
        assertEquals(400, post(1, "saves/100/ranks/7", "{}").statusCode());
        HttpResponse<String> mismatch = post(1, "saves/100/ranks/7", "{\"world\": 4}");
        assertEquals(409, mismatch.statusCode(), mismatch.body());
        assertTrue(mismatch.body().contains("has 8 ranks, not 4"), mismatch.body());
        HttpResponse<String> last = post(1, "saves/100/ranks/7", sealBody);
        assertEquals(200, last.statusCode(), last.body());
        assertTrue(json.readTree(last.body()).get("complete").asBoolean(), last.body());
        for (int w = 0; w < 3; w++) {
            assertEquals(100, generations(w).get("current").asLong(), generations(w).toString());
            assertEquals("100", new String(read(w, "/job/j/generation"), StandardCharsets.US_ASCII));
        }
        JsonNode manifest = json.readTree(read(1, "/job/j/generations/100/manifests/4.json"));
        String qkv = "language_model.encoder.layers.0.self_attention.query_key_value.weight"; // rank 4 is stage 1
        try (DataRef ref = stores.get(1).open(PATHS.saved(4, qkv))) {
            assertEquals(io.tenplex.store.memory.Crc32c.hex(ref.crc32c(0, ref.size()).getAsInt()),
                    manifest.at("/tensors/" + qkv + "/crc32c").asText(), manifest.toString());
        }
        // training goes on: a new save overwrites rank 0's working copy, its seal alone completes nothing
        String emb = "language_model.embedding.word_embeddings.weight";
        TensorMeta m = stores.get(0).stat(PATHS.saved(0, emb)).orElseThrow().meta();
        Fixtures.putTensor(stores.get(0), PATHS.saved(0, emb).toString(), m, new byte[(int) m.byteSize()], true);
        assertEquals(200, post(0, "saves/200/ranks/0", sealBody).statusCode());
        assertEquals(409, post(0, "saves/50/ranks/0", sealBody).statusCode()); // older than the complete one
        assertEquals(100, generations(2).get("current").asLong());
        // reconfigure without "from" or "step": the current complete generation with its recorded configuration
        HttpResponse<String> r = post(0, "reconfigure", "{\"model\": " + ModelSpecJson.write(model) + ", \"to\": "
                + config(b) + "}");
        assertEquals(202, r.statusCode(), r.body());
        JsonNode done = json.readTree(http.send(HttpRequest.newBuilder(URI.create(base(0) + json.readTree(r.body())
                .get("status").asText() + "?wait=true")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertEquals("committed", done.get("state").asText(), done.toString());
        assertEquals("/job/j/generations/100", done.get("source").asText());
        assertLoaded(from, Ptc.packed(model, b, 4), full, "100"); // the sealed bytes, not the newer working copy
    }

    /** Megatron's nesting of a model key, as the prototype's client stores a Megatron state dict. */
    private static String nested(String key) {
        String enc = ".encoder.";
        return (key.contains(enc) ? "model/language_model/encoder/" + key.substring(key.indexOf(enc) + enc.length())
                : "model/" + key.replace('.', '/')) + CheckpointLayout.TENSOR_SUFFIX;
    }

    /** Each rank's Megatron parameter groups (matrices, then vectors, in model order) under a PTC. */
    private static List<List<String>> groups(Ptc ptc, int rank) {
        List<String> params = new ArrayList<>();
        Map<String, Integer> dims = new LinkedHashMap<>();
        for (Ptc.Shard s : ptc.shards(rank)) {
            if (!s.key().startsWith("optimizer.")) {
                params.add(s.key());
                dims.put(s.key(), s.shape().rank());
            }
        }
        return CheckpointLayout.groups(params, dims);
    }

    private static String megatronPath(Ptc ptc, int rank, String key) {
        return key.startsWith("optimizer.") ? CheckpointLayout.megatronOptimizerPath(key, groups(ptc, rank)) : nested(key);
    }

    @Test
    void megatronNestedLayout_isReadAndWrittenInTheJobsOwnLayout() throws Exception {
        Model piped = MegatronLayout.model(GPT, 2); // with the tied head of pipelines
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(2, 4, 1);
        Ptc from = Ptc.packed(piped, a, 4);
        Ptc to = Ptc.packed(piped, b, 4);
        Map<String, byte[]> full = ReferenceInterpreter.fullTensors(from, 9);
        var shards = ReferenceInterpreter.shard(from, full);
        for (int rank = 0; rank < from.worldSize(); rank++) {
            if (a.dp() > 1 && from.layout().coord(rank, a).dp() != 0) {
                continue; // Megatron saves from data-parallel rank 0 only
            }
            TensorStore st = stores.get(from.device(rank).worker());
            String dir = "/job/j/save/" + rank + "/";
            for (Ptc.Shard sh : from.shards(rank)) {
                Fixtures.putTensor(st, dir + megatronPath(from, rank, sh.key()), new TensorMeta(sh.spec().dtype(),
                        sh.shape()), shards.get(rank).get(sh.key()).data(), false);
            }
            Map<String, String> values = new LinkedHashMap<>(CheckpointLayout.megatronGenerated(groups(from, rank)));
            values.put("iteration.int", "5");
            values.put("args.argparse.Namespace", "pickled args");
            values.put("lr_scheduler/max_lr.float", "0.00015");
            values.put("optimizer/optimizer/param_groups/dir.meta", "list\n2");
            values.put("optimizer/optimizer/param_groups/0/lr.float", "5e-05");
            values.put("rng_state/dir.meta", "list\n1");
            values.put("rng_state/0/seed.int", Integer.toString(rank));
            values.forEach((path, text) -> Fixtures.putFile(st, dir + path, text.getBytes(StandardCharsets.UTF_8), false));
        }
        HttpResponse<String> r = post(0, "reconfigure", "{\"model\": " + ModelSpecJson.write(piped) + ", \"from\": "
                + config(a) + ", \"to\": " + config(b) + ", \"step\": 5}");
        assertEquals(202, r.statusCode(), r.body());
        JsonNode done = json.readTree(http.send(HttpRequest.newBuilder(URI.create(base(0) + json.readTree(r.body())
                .get("status").asText() + "?wait=true")).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertEquals("committed", done.get("state").asText(), done.toString());
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            int w = to.device(rank).worker();
            String dir = "/job/j/load/" + rank + "/";
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), read(w, dir + megatronPath(to, rank, e.getKey())),
                        "rank " + rank + " " + e.getKey());
            }
            var c = to.layout().coord(rank, b); // rng_state: from the old rank at the same position (dp 0), else rank 0
            boolean same = c.tp() < a.tp() && c.pp() < a.pp();
            int src = same ? from.layout().rank(new io.tenplex.ptc.RankLayout.Coord(c.tp(), 0, c.pp()), a) : 0;
            assertEquals(Integer.toString(src), new String(read(w, dir + "rng_state/0/seed.int"), StandardCharsets.UTF_8));
            assertEquals("0.00015", new String(read(w, dir + "lr_scheduler/max_lr.float"), StandardCharsets.UTF_8));
            // parameter groups and list markers describe this rank's own parameters
            List<List<String>> g = groups(to, rank);
            assertEquals("list\n" + g.get(0).size(), new String(read(w, dir + "optimizer/fp32_from_fp16_params/0/dir.meta"),
                    StandardCharsets.UTF_8));
            assertEquals("list\n" + g.get(1).size(), new String(read(w, dir
                    + "optimizer/optimizer/param_groups/1/params/dir.meta"), StandardCharsets.UTF_8));
            assertEquals(Integer.toString(g.get(0).size()), new String(read(w, dir
                    + "optimizer/optimizer/param_groups/1/params/0.int"), StandardCharsets.UTF_8));
            assertEquals("5e-05", new String(read(w, dir + "optimizer/optimizer/param_groups/0/lr.float"),
                    StandardCharsets.UTF_8));
        }
    }

    @Test
    void pacedByLinkRate_sameResult_andABadRateIsRefused() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2); // TP and PP change across the three workers
        Map<String, byte[]> full = save(Ptc.packed(model, a, 4));
        JsonNode r = reconfigure(a, b, true, ", \"linkRate\": \"10gbit\"", true);
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertEquals(10_000_000_000L, r.get("pacedForLinkRate").asLong(), r.toString());
        assertTrue(r.at("/report/interWorkerBytes").asLong() > 0, r.toString()); // flows were paced
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);

        String body = "{\"model\": " + ModelSpecJson.write(model) + ", \"from\": " + config(b) + ", \"to\": " + config(a)
                + ", \"linkRate\": \"fast\"}";
        HttpResponse<String> bad = http.send(HttpRequest.newBuilder(URI.create(base(0) + JobsFixture.PREFIX
                + "j/reconfigure")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, bad.statusCode(), bad.body());
        assertTrue(bad.body().contains("link rate 'fast'"), bad.body());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full); // the committed generation is untouched
    }

    @Test
    void centralMode_routesEverythingThroughOneDaemon_withTheSameResult() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(1, 2, 4); // 8 ranks on workers 0-1
        Map<String, byte[]> full = save(Ptc.packed(model, a, 4));
        JsonNode r = reconfigure(a, b, true, ", \"central\": true, \"centralWorker\": 2", false); // peers from --peers
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertEquals("central (worker 2)", r.get("mode").asText());
        assertTrue(r.at("/workers/2/remoteBytes").asLong() > 0, r.toString()); // worker 2 gathered everything
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
        for (TensorStore st : stores) {
            assertTrue(st.stat(StorePath.parse("/job/j/staging")).map(e -> e.children() == 0).orElse(true));
        }
        assertEquals(0, stores.get(2).allocator().usedBytes()); // its staging is gone, it holds no shards
    }

    @Test
    void partFailingDuringExecution_abortsEverywhere_andStagingIsCleaned() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        Map<String, byte[]> full = save(Ptc.packed(model, a, 4));
        assertEquals("committed", reconfigure(a, b, true).get("state").asText());
        long[] used = stores.stream().mapToLong(st -> st.allocator().usedBytes()).toArray();
        String key = "language_model.encoder.layers.1.mlp.dense_4h_to_h.weight"; // global layer 3, stage 1
        long dropped = 0;
        for (int rank : new int[] {4, 6}) { // both replicas damaged: saved with too few elements
            dropped += stores.get(1).stat(PATHS.saved(rank, key)).orElseThrow().size() - 2;
            Fixtures.putTensor(stores.get(1), PATHS.saved(rank, key).toString(), TensorMeta.of(
                    io.tenplex.ptc.DType.F16, 1), new byte[2], true);
        }
        JsonNode r = reconfigure(a, ParallelConfig.of(1, 4, 2), false);
        assertEquals("aborted", r.get("state").asText(), r.toString());
        assertTrue(r.get("error").asText().contains("failed on every replica"), r.toString());
        assertEquals(used[0], stores.get(0).allocator().usedBytes());
        assertEquals(used[1] - dropped, stores.get(1).allocator().usedBytes());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
        // a shard that no holder saved at all is found before any byte moves
        stores.get(1).delete(PATHS.saved(4, key));
        stores.get(1).delete(PATHS.saved(6, key));
        r = reconfigure(a, ParallelConfig.of(1, 4, 2), false);
        assertEquals("aborted", r.get("state").asText(), r.toString());
        assertTrue(r.get("error").asText().contains("no rank of [6, 4] saved " + key), r.toString());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
    }

    @Test
    void daemonDown_failsClearly_andThePreviousGenerationStays() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 2, 2);
        ParallelConfig b = ParallelConfig.of(4, 1, 2);
        Map<String, byte[]> full = save(Ptc.packed(model, a, 4));
        assertEquals("committed", reconfigure(a, b, true).get("state").asText());
        byte[] before = read(1, "/job/j/load/4/language_model.encoder.layers.2.mlp.dense_h_to_4h.weight");
        long used0 = stores.get(0).allocator().usedBytes();
        servers.get(1).close(); // worker 1 holds pipeline stage 1 and is gone
        JsonNode r = reconfigure(a, ParallelConfig.of(1, 4, 2), false); // model stored with the job
        assertEquals("aborted", r.get("state").asText(), r.toString());
        assertTrue(r.get("error").asText().contains("daemon of worker 1 at"), r.toString());
        assertTrue(r.get("error").asText().contains("is unreachable"), r.toString());
        assertArrayEquals(before, read(1, "/job/j/load/4/language_model.encoder.layers.2.mlp.dense_h_to_4h.weight"));
        assertEquals(used0, stores.get(0).allocator().usedBytes());
        assertLoaded(Ptc.packed(model, a, 4), Ptc.packed(model, b, 4), full);
    }
}
