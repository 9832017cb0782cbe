package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import io.tenplex.server.jobs.JobsFixture;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Real reconfigurations of a Megatron GPT between P = 1 and P > 1 on two daemons over loopback,
 * with one stored model description: the new generation has the tied head
 * ({@code word_embeddings_for_head} and its Adam state, filled from the word embeddings) on the
 * last stage exactly when the new configuration is a pipeline, as Megatron loads it, whichever
 * configuration the description was written for. Every loaded shard is compared byte for byte with
 * direct sharding of the same tensors.
 */
class MegatronPipelineChangeIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final JobLayout PATHS = new JobLayout("j");
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private LoopbackDaemons cluster;
    private List<TensorStore> stores;
    private List<RestServer> servers;
    private List<JobsFixture> services;
    private Map<Integer, InetSocketAddress> daemons;

    @BeforeEach
    void start() throws Exception {
        cluster = new LoopbackDaemons(2, 256L << 20);
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
        return cluster.save(PATHS, from, 11);
    }

    private static String config(ParallelConfig c) {
        return "{\"tp\": " + c.tp() + ", \"pp\": " + c.pp() + ", \"dp\": " + c.dp() + ", \"devicesPerWorker\": 2}";
    }

    private JsonNode reconfigure(Model described, ParallelConfig a, ParallelConfig b) throws Exception {
        String body = "{\"model\": " + ModelSpecJson.write(described) + ", \"from\": " + config(a) + ", \"to\": "
                + config(b) + ", \"step\": 7}";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemons.get(0).getPort()
                + JobsFixture.PREFIX + "j/reconfigure")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(202, r.statusCode(), r.body());
        String status = json.readTree(r.body()).get("status").asText();
        return json.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemons.get(0).getPort()
                + status + "?wait=true")).build(), HttpResponse.BodyHandlers.ofString()).body());
    }

    /** Every shard Megatron loads under {@code to} is there and exact; no rank holds a tied head at P = 1. */
    private void assertLoaded(Ptc to, Map<String, byte[]> full) {
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < to.worldSize(); rank++) {
            TensorStore st = stores.get(to.device(rank).worker());
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), SavedJobs.bytes(st, "/job/j/load/" + rank + "/" + e.getKey()),
                        "rank " + rank + " " + e.getKey());
            }
            String head = "/job/j/load/" + rank + "/" + MegatronLayout.TIED_HEAD;
            boolean last = to.layout().coord(rank, to.config()).pp() == to.config().pp() - 1;
            assertEquals(to.config().pp() > 1 && last, st.stat(StorePath.parse(head)).isPresent(), head);
        }
    }

    @Test
    void oneStageToTwo_withTheOneStageDescription_loadsTheTiedHeadOnTheLastStage() throws Exception {
        ParallelConfig a = ParallelConfig.of(2, 1, 2);
        ParallelConfig b = ParallelConfig.of(1, 2, 2);
        Map<String, byte[]> full = save(Ptc.packed(MegatronLayout.model(GPT, 1), a, 2));
        JsonNode r = reconfigure(MegatronLayout.model(GPT, 1), a, b);
        assertEquals("committed", r.get("state").asText(), r.toString());
        Ptc to = Ptc.packed(MegatronLayout.model(GPT, 2), b, 2);
        assertTrue(to.model().has("optimizer.fp32_param." + MegatronLayout.TIED_HEAD));
        assertLoaded(to, full);
    }

    @Test
    void twoStagesToOne_withThePipelineDescription_loadsNoTiedHead() throws Exception {
        ParallelConfig a = ParallelConfig.of(1, 2, 2);
        ParallelConfig b = ParallelConfig.of(2, 1, 2);
        Map<String, byte[]> full = save(Ptc.packed(MegatronLayout.model(GPT, 2), a, 2));
        JsonNode r = reconfigure(MegatronLayout.model(GPT, 2), a, b);
        assertEquals("committed", r.get("state").asText(), r.toString());
        assertLoaded(Ptc.packed(MegatronLayout.model(GPT, 1), b, 2), full);
    }
}
