package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.MegatronStructures;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.RecordedStructures;
import io.tenplex.server.jobs.LoneJobServer;
import io.tenplex.store.Fixtures;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code POST .../reconfigure?dryRun=true} on a real daemon over HTTP with the model inferred from
 * real Megatron-LM checkpoint structures (GPT "large", recorded with P = 1 or P = 2): each side of a
 * pipeline change is planned with its own model, the tied head and its Adam state present exactly
 * where P > 1, whichever configuration the stored model came from. Megatron's shard counts: 24
 * layers of 12 tensors, 2 embeddings and the final norm, each with exp_avg, exp_avg_sq and an fp32
 * master copy: 1168 tensors at P = 1 and 1172 with the tied head, one shard per tensor, tensor rank
 * and data-parallel replica.
 */
class MegatronDryRunIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private LoneJobServer daemon;

    @BeforeEach
    void start() throws Exception {
        daemon = new LoneJobServer(64L << 20);
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private void storeModelInferredFrom(String recorded) throws Exception {
        RecordedStructures.Recorded r = RecordedStructures.load(recorded);
        Model m = MegatronStructures.infer(r.byRank(), r.config(), RankLayout.MEGATRON, 16, 50257, 128, DType.F16);
        Fixtures.putFile(daemon.store, "/job/j/model.json", ModelSpecJson.write(m).getBytes(StandardCharsets.UTF_8),
                false);
    }

    private JsonNode dryRun(String from, String to) throws Exception {
        String body = "{\"from\": " + config(from) + ", \"to\": " + config(to) + "}";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(daemon.url()
                + "/api/v1/jobs/j/reconfigure?dryRun=true")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private static String config(String tpd) {
        String[] p = tpd.split("/");
        return "{\"tp\": " + p[0] + ", \"pp\": " + p[1] + ", \"dp\": " + p[2] + ", \"devicesPerWorker\": 4}";
    }

    @ParameterizedTest(name = "model from {0}: {1} -> {2} plans {3} shards")
    @CsvSource({
        "pp01/mp02/dp01, 2/1/2, 1/2/2, 2344",
        "pp02/mp02/dp01, 2/1/2, 1/2/2, 2344",
        "pp01/mp02/dp01, 1/2/2, 2/1/2, 4672",
        "pp02/mp02/dp01, 1/2/2, 2/1/2, 4672",
        "pp01/mp04/dp01, 2/2/1, 4/2/1, 4688",
        "pp02/mp04/dp01, 4/1/1, 1/1/2, 2336",
    })
    void pipelineChange_plansEachSideWithItsOwnModel(String recorded, String from, String to, int shards)
            throws Exception {
        storeModelInferredFrom(recorded);
        JsonNode plan = dryRun(from, to);
        assertEquals(shards, plan.get("shards").asInt(), plan.get("from") + " -> " + plan.get("to"));
        boolean headAfter = !to.split("/")[1].equals("1");
        boolean mentioned = false;
        for (JsonNode line : plan.get("plan")) {
            mentioned |= line.asText().contains("word_embeddings_for_head");
        }
        assertTrue(!mentioned || headAfter, "no tied head is planned for P = 1: " + plan.get("plan"));
    }
}
