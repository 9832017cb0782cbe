package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A seal checks the rank's saved shards against the model spec stored with the job, on a real daemon
 * over HTTP: a row-parallel weight described as column-parallel (described shard [16, 32], saved
 * [32, 16]) or a tensor saved with another dtype than described is refused with a 400 that names the
 * tensor, the partition and both shapes, nothing sealed; the same save seals once the description is right.
 */
class SealDescriptionIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CONFIG = "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"devices\": [[0, 0], [0, 1]]}";
    private final HttpClient http = HttpClient.newHttpClient();
    private LoneJobServer daemon;
    private TensorStore store;

    @BeforeEach
    void start() throws Exception {
        daemon = new LoneJobServer(64L << 20);
        store = daemon.store;
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    /** One layer of two linears of 32 x 32 and a final norm; {@code fc2} split along {@code fc2Dim}. */
    private void describe(int fc2Dim, String normDtype) {
        String spec = """
                {"layers": 1, "tensors": [
                  {"name": "layers.0.fc1.weight", "dtype": "f32", "shape": [32, 32], "layer": 0,
                   "partition": {"kind": "split", "dim": 0}},
                  {"name": "layers.0.fc2.weight", "dtype": "f32", "shape": [32, 32], "layer": 0,
                   "partition": {"kind": "split", "dim": %d}},
                  {"name": "norm.weight", "dtype": "%s", "shape": [32], "stage": "last",
                   "partition": {"kind": "replicated"}}
                ], "values": [{"key": "iteration"}]}""".formatted(fc2Dim, normDtype);
        Fixtures.putFile(store, "/job/j/model.json", spec.getBytes(StandardCharsets.UTF_8), true);
    }

    /** What tensor rank {@code rank} of (2,1,1) saves: fc1 column-parallel, fc2 row-parallel, the norm whole. */
    private void saveRank(int rank) {
        String dir = "/job/j/save/" + rank + "/";
        tensor(dir + "model/layers/0/fc1/weight.numpy.ndarray", 16, 32);
        tensor(dir + "model/layers/0/fc2/weight.numpy.ndarray", 32, 16);
        tensor(dir + "model/norm/weight.numpy.ndarray", 32);
        Fixtures.putFile(store, dir + "iteration.int", "10".getBytes(StandardCharsets.UTF_8), true);
        Fixtures.putFile(store, dir + "notes.str", "not described".getBytes(StandardCharsets.UTF_8), true);
    }

    private void tensor(String path, long... dims) {
        TensorMeta m = TensorMeta.of(DType.F32, dims);
        Fixtures.putTensor(store, path, m, Fixtures.iota32((int) m.shape().volume()), true);
    }

    private HttpResponse<String> seal(long step, int rank) throws Exception {
        String body = "{\"world\": 2, \"config\": " + CONFIG + ", \"entries\": 5}";
        return http.send(HttpRequest.newBuilder(URI.create(daemon.url() + "/api/v1/jobs/j/saves/" + step + "/ranks/"
                + rank)).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode generations() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(daemon.url()
                + "/api/v1/jobs/j/generations")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private boolean exists(String path) {
        return store.stat(StorePath.parse(path)).isPresent();
    }

    private static String error(HttpResponse<String> r) throws Exception {
        assertEquals(400, r.statusCode(), r.body());
        assertEquals("bad_request", r.headers().firstValue("X-Tenplex-Error-Code").orElse(null));
        return r.body().startsWith("{") ? JSON.readTree(r.body()).path("error").asText() : r.body().strip();
    }

    @Test
    void aRowParallelWeightDescribedColumnParallel_isRefusedAtTheSeal_andSealsOnceDescribedRight() throws Exception {
        describe(0, "f32");
        saveRank(0);
        saveRank(1);
        HttpResponse<String> refused = seal(10, 0);
        assertEquals("rank 0 of job j does not match the model spec stored with the job (/job/j/model.json): under "
                + "(T,P,D)=(2,1,1) tensor layers.0.fc2.weight (model/layers/0/fc2/weight.numpy.ndarray), "
                + "f32[32, 32] with partition column (split dim 0), is described as f32[16, 32] on rank 0 but saved "
                + "as f32[32, 16]; correct the description (spec=) or what the rank saves; nothing was sealed: save again",
                error(refused));
        assertFalse(exists("/job/j/generations/10"), "nothing of the refused seal is written");
        assertEquals("{\"current\":null,\"generations\":[]}", generations().toString(), "no seal is on record");
        assertTrue(exists("/job/j/save/0/model/layers/0/fc2/weight.numpy.ndarray"), "the save stays, unsealed");

        describe(1, "f32");
        HttpResponse<String> first = seal(10, 0);
        assertEquals(200, first.statusCode(), first.body());
        assertFalse(JSON.readTree(first.body()).path("complete").asBoolean(), first.body());
        HttpResponse<String> second = seal(10, 1);
        assertEquals(200, second.statusCode(), second.body());
        assertTrue(JSON.readTree(second.body()).path("complete").asBoolean(), second.body());
        assertEquals(10, generations().path("current").asLong(), generations().toString());
    }

    @Test
    void aTensorSavedWithAnotherDtype_isRefused_andTheGenerationIsNotComplete() throws Exception {
        describe(1, "bf16");
        saveRank(0);
        saveRank(1);
        String e = error(seal(20, 1));
        assertTrue(e.startsWith("rank 1 of job j does not match the model spec stored with the job"), e);
        assertTrue(e.contains("tensor norm.weight (model/norm/weight.numpy.ndarray), bf16[32] with partition "
                + "replicated, is described as bf16[32] on rank 1 but saved as f32[32]"), e);
        describe(1, "f32");
        assertEquals(200, seal(20, 0).statusCode());
        assertFalse(exists("/job/j/generations/20/1"), "rank 1 is not sealed");
        JsonNode g = generations();
        assertTrue(g.path("current").isNull(), g.toString());
        assertEquals("[0]", g.path("generations").get(0).path("sealedRanks").toString(), "the generation is not complete");
        assertEquals(200, seal(20, 1).statusCode());
        assertEquals(20, generations().path("current").asLong(), generations().toString());
    }
}
