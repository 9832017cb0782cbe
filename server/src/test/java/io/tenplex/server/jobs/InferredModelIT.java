package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A job that stored partition rules but no model spec, on a real daemon over HTTP: its first
 * reconfiguration infers the model from the shards its ranks saved (in the nested state-dict layout
 * {@code tenplex.save} writes) and the configuration they were sealed under, stores it, and plans with
 * it; a dry run infers without storing. Rules that do not fit the shards are refused with a 400 that
 * names the tensor, and nothing is stored.
 */
class InferredModelIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A small model: a vocabulary embedding (10 rows, padded for T), one layer of two linears, a final norm. */
    private static final String RULES = """
            {"rules": [
              {"match": "emb.weight", "partition": "vocab", "divisibleBy": 2, "size": "${vocab}", "stage": "first"},
              {"match": "*.fc1.weight", "partition": "column"},
              {"match": "*.fc2.weight", "partition": "row"},
              {"match": "norm.weight", "partition": "replicated", "stage": "last"}
            ], "params": {"vocab": 10}}""";
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

    /** What one tensor rank of (2,1,1) saves: T=2 cuts the embedding, fc1's rows and fc2's columns in half. */
    private static Map<String, long[]> shards() {
        Map<String, long[]> s = new TreeMap<>();
        s.put("emb.weight", new long[] {6, 4});
        s.put("layers.0.fc1.weight", new long[] {4, 4});
        s.put("layers.0.fc2.weight", new long[] {4, 4});
        s.put("norm.weight", new long[] {4});
        return s;
    }

    /** Rank {@code rank} of (2,1,1) saves its shards, Adam moments by name, a step and settings, and seals step 10. */
    private void saveRank(int rank, Map<String, long[]> shards) throws Exception {
        String dir = "/job/j/save/" + rank + "/";
        for (Map.Entry<String, long[]> e : shards.entrySet()) {
            TensorMeta m = TensorMeta.of(DType.F32, e.getValue());
            byte[] bytes = Fixtures.iota32((int) m.shape().volume());
            Fixtures.putTensor(store, dir + "model/" + e.getKey() + ".numpy.ndarray", m, bytes, false);
            Fixtures.putTensor(store, dir + "optimizer/exp_avg/" + e.getKey() + ".numpy.ndarray", m, bytes, false);
        }
        Fixtures.putFile(store, dir + "optimizer/step.float", "10.0".getBytes(StandardCharsets.UTF_8), false);
        Fixtures.putFile(store, dir + "optimizer/param_groups/dir.meta", "list\n1\n".getBytes(StandardCharsets.UTF_8),
                false);
        Fixtures.putFile(store, dir + "optimizer/param_groups/0/lr.float", "0.001".getBytes(StandardCharsets.UTF_8),
                false);
        String seal = "{\"world\": 2, \"config\": " + config(2) + "}";
        HttpResponse<String> r = post("/api/v1/jobs/j/saves/10/ranks/" + rank, seal);
        assertEquals(200, r.statusCode(), r.body());
    }

    private static String config(int tp) {
        StringBuilder devices = new StringBuilder();
        for (int i = 0; i < tp; i++) {
            devices.append(i == 0 ? "" : ", ").append("[0, ").append(i).append(']');
        }
        return "{\"tp\": " + tp + ", \"pp\": 1, \"dp\": 1, \"devices\": [" + devices + "]}";
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).header("Content-Type",
                "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> reconfigure(boolean dry) throws Exception {
        String daemons = "{\"0\": \"" + URI.create(daemon.url()).getAuthority() + "\"}";
        return post("/api/v1/jobs/j/reconfigure" + (dry ? "?dryRun=true" : ""), "{\"to\": " + config(1)
                + ", \"daemons\": " + daemons + "}");
    }

    private void storeRules(String text) {
        Fixtures.putFile(store, "/job/j/rules.json", text.getBytes(StandardCharsets.UTF_8), true);
    }

    private boolean modelStored() {
        return store.stat(StorePath.parse("/job/j/model.json")).isPresent();
    }

    private JsonNode awaitCommitted(HttpResponse<String> started) throws Exception {
        assertEquals(202, started.statusCode(), started.body());
        String status = JSON.readTree(started.body()).path("status").asText();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + status + "?wait=true"))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
        JsonNode st = JSON.readTree(r.body());
        assertEquals("committed", st.path("state").asText(), r.body());
        return st;
    }

    @Test
    void rulesOnly_theFirstReconfigurationInfersTheModel_storesIt_andADryRunStoresNothing() throws Exception {
        storeRules(RULES);
        saveRank(0, shards());
        saveRank(1, shards());

        HttpResponse<String> dry = reconfigure(true);
        assertEquals(200, dry.statusCode(), dry.body());
        // 4 tensors and their 4 moments, each one destination shard on the one new rank
        assertEquals(8, JSON.readTree(dry.body()).path("shards").asInt(), dry.body());
        assertTrue(!modelStored(), "a dry run stores nothing");

        awaitCommitted(reconfigure(false));
        JsonNode model = JSON.readTree(Fixtures.readAll(store, "/job/j/model.json"));
        Map<String, JsonNode> byName = new TreeMap<>();
        model.path("tensors").forEach(t -> byName.put(t.path("name").asText(), t));
        assertEquals("[10,4]", byName.get("emb.weight").path("shape").toString(), "unpadded to the rules' size");
        assertEquals("vocab", byName.get("emb.weight").path("partition").path("kind").asText());
        assertEquals("[8,4]", byName.get("layers.0.fc1.weight").path("shape").toString());
        assertEquals("[4,8]", byName.get("layers.0.fc2.weight").path("shape").toString());
        assertEquals("[8,4]", byName.get("optimizer.exp_avg.layers.0.fc1.weight").path("shape").toString());
        assertEquals("last", byName.get("norm.weight").path("stage").asText());
        assertEquals(8, byName.size(), byName.keySet()::toString);
        Supplier<String> values = () -> model.path("values").toString();
        assertTrue(values.get().contains("optimizer.step") && values.get().contains("optimizer.param_groups"),
                values);
        // the new rank holds the whole of fc1, gathered from both halves; the padding rows are gone
        assertEquals("[8, 4]", store.stat(StorePath.parse("/job/j/load/0/model/layers.0.fc1.weight.numpy.ndarray"))
                .orElseThrow().meta().shape().toString());
        assertEquals("[10, 4]", store.stat(StorePath.parse("/job/j/load/0/model/emb.weight.numpy.ndarray"))
                .orElseThrow().meta().shape().toString());
    }

    @Test
    void rulesThatDoNotFitTheShards_areRefusedNamingTheTensor_andNothingIsStored() throws Exception {
        storeRules(RULES.replace("{\"match\": \"norm.weight\", \"partition\": \"replicated\", \"stage\": \"last\"}",
                "{\"match\": \"other\", \"partition\": \"replicated\"}"));
        saveRank(0, shards());
        saveRank(1, shards());
        assertRefused(reconfigure(false), "norm.weight", "matches no rule");

        storeRules(RULES.replace("\"vocab\": 10", "\"vocab\": 20"));
        assertRefused(reconfigure(false), "emb.weight", "not vocabulary 20");

        storeRules("{\"rules\": [");
        assertRefused(reconfigure(false), "rules are not valid JSON", "");
        storeRules(" ".repeat(2 << 20) + RULES);
        assertRefused(reconfigure(false), "at most 1048576 are read", "");
    }

    @Test
    void tensorRanksThatSavedDifferentShapes_areRefusedNamingBoth() throws Exception {
        storeRules(RULES);
        saveRank(0, shards());
        Map<String, long[]> odd = shards();
        odd.put("norm.weight", new long[] {5});
        saveRank(1, odd);
        assertRefused(reconfigure(false), "norm.weight: rank 0 saved f32[4] but rank 1", "");
    }

    @Test
    void noRulesOrNoGeneration_sayWhatIsMissing() throws Exception {
        assertRefused(reconfigure(false), "none stored with job j", "rules=");
        storeRules(RULES);
        assertRefused(reconfigure(false), "no complete generation", "");
    }

    private void assertRefused(HttpResponse<String> r, String says, String andSays) {
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains(says) && r.body().contains(andSays), r.body());
        assertTrue(!modelStored(), "nothing stored after a refusal");
    }
}
