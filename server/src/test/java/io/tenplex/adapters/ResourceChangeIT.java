package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.SavedJobs;
import io.tenplex.jobs.StopFlags;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.RestServer;
import io.tenplex.server.jobs.JobsFixture;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.transform.ReferenceInterpreter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler-facing lifecycle over real HTTP on one daemon: {@code POST .../resources} raises the
 * stop flag (for a step), waits for every rank's save, chooses the configuration, reconfigures,
 * and clears the flag; bad requests change nothing; a change can be cancelled or time out.
 */
class ResourceChangeIT {
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private TensorStore store;
    private RestServer server;
    private JobsFixture jobs;
    private StopFlags flags;
    private String base;

    @BeforeEach
    void start() throws Exception {
        store = new TensorStore(new Allocator(256L << 20));
        flags = new StopFlags();
        jobs = new JobsFixture(store, new PeerClient(2, null), Duration.ofSeconds(30), flags);
        server = new RestServer(store, null);
        server.addControl(JobsFixture.PREFIX, jobs);
        server.addControl(io.tenplex.server.jobs.StopRoute.PATH, new io.tenplex.server.jobs.StopRoute(flags));
        InetSocketAddress a = server.start("127.0.0.1", 0);
        jobs.setDefaultDaemons(Map.of(0, a));
        base = "http://127.0.0.1:" + a.getPort();
        Fixtures.putFile(store, "/job/j/model.json", ModelSpecJson.write(MODEL).getBytes(StandardCharsets.UTF_8), false);
    }

    @AfterEach
    void stop() {
        server.close();
        jobs.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode stopFlag(long step) throws Exception {
        return json.readTree(send("GET", "/api/v1/jobs/j/stop?step=" + step, null).body());
    }

    /** Saves the job under (2,2,1) on worker 0 and seals all four ranks at {@code step}, as training would. */
    private Map<String, byte[]> saveAndSeal(long step) throws Exception {
        Ptc from = Ptc.packed(MODEL, ParallelConfig.of(2, 2, 1), 4);
        if (store.stat(io.tenplex.store.StorePath.parse("/job/j/save")).isPresent()) {
            store.delete(io.tenplex.store.StorePath.parse("/job/j/save")); // training replaces its working copy
        }
        Map<String, byte[]> full = SavedJobs.save(List.of(store), new JobLayout("j"), from, 3);
        for (int rank = 0; rank < 4; rank++) {
            for (io.tenplex.ptc.ValueSpec v : MODEL.values()) {
                Fixtures.putFile(store, "/job/j/save/" + rank + "/" + v.key(), (v.key() + " of rank " + rank)
                        .getBytes(StandardCharsets.UTF_8), false);
            }
        }
        for (int rank = 0; rank < 4; rank++) {
            HttpResponse<String> r = send("POST", "/api/v1/jobs/j/saves/" + step + "/ranks/" + rank,
                    "{\"world\": 4, \"config\": {\"tp\": 2, \"pp\": 2, \"dp\": 1, \"devicesPerWorker\": 4}}");
            assertEquals(200, r.statusCode(), r.body());
        }
        return full;
    }

    @Test
    void change_stopsAtTheStep_waitsForTheSave_reconfigures_andClearsTheFlag() throws Exception {
        HttpResponse<String> posted = send("POST", "/api/v1/jobs/j/resources", "{\"size\": 2, \"devicesPerWorker\": 4, "
                + "\"atStep\": 100, \"parallelizer\": {\"table\": {\"2\": {\"mp_size\": 2, \"pp_size\": 1, \"dp_size\": 1}}}}");
        assertEquals(202, posted.statusCode(), posted.body());
        String status = json.readTree(posted.body()).path("status").asText();
        assertFalse(stopFlag(99).path("stop").asBoolean());
        assertTrue(stopFlag(100).path("stop").asBoolean());
        assertEquals("stop", send("GET", "/stop?job=j&step=100", null).body());
        assertEquals("run", send("GET", "/stop?job=j&step=99", null).body());
        HttpResponse<String> second = send("POST", "/api/v1/jobs/j/resources", "{\"size\": 1, \"devicesPerWorker\": 4}");
        assertEquals(409, second.statusCode());
        assertTrue(second.body().contains("is still running"), second.body());

        Map<String, byte[]> full = saveAndSeal(100);
        JsonNode done = json.readTree(send("GET", status + "?wait=true", null).body());
        assertEquals("done", done.path("state").asText(), done.toString());
        assertEquals(2, done.at("/config/tp").asInt());
        assertEquals(1, done.at("/config/dp").asInt());
        assertEquals(100, done.path("generation").asLong());
        assertEquals("committed", done.at("/reconfiguration/state").asText());
        assertTrue(done.path("events").toString().contains("parallelizer table chose (T,P,D)=(2,1,1)"), done.toString());
        assertFalse(stopFlag(100).path("raised").asBoolean());
        Ptc to = Ptc.packed(MODEL, ParallelConfig.of(2, 1, 1), 4);
        var want = ReferenceInterpreter.shard(to, full);
        for (int rank = 0; rank < 2; rank++) {
            for (var e : want.get(rank).entrySet()) {
                assertArrayEquals(e.getValue().data(), Fixtures.readAll(store, "/job/j/load/" + rank + "/" + e.getKey()),
                        "rank " + rank + " " + e.getKey());
            }
        }
        assertEquals("100", new String(Fixtures.readAll(store, "/job/j/iter"), StandardCharsets.UTF_8).strip());
    }

    @Test
    void builtinChooser_usesTheStoredModel() throws Exception {
        saveAndSeal(7);
        // the flag is raised after generation 7: the change waits for a newer one
        HttpResponse<String> posted = send("POST", "/api/v1/jobs/j/resources", "{\"devices\": [[0,0],[0,1],[0,2]]}");
        assertEquals(202, posted.statusCode(), posted.body());
        String status = json.readTree(posted.body()).path("status").asText();
        assertTrue(stopFlag(7).path("stop").asBoolean());
        saveAndSeal(8);
        JsonNode done = json.readTree(send("GET", status + "?wait=true", null).body());
        assertEquals("done", done.path("state").asText(), done.toString());
        assertEquals(8, done.path("generation").asLong());
        assertEquals(3, done.at("/config/dp").asInt(), done.toString()); // largest D that fits: (1,1,3)
        JsonNode asked = json.readTree(send("POST", "/api/v1/jobs/j/parallelize", "{\"devices\": [[0,0],[0,1],[0,2]]}")
                .body());
        assertEquals(json.readTree("{\"tp\":1,\"pp\":1,\"dp\":3,\"parallelizer\":\"builtin\"}"), asked,
                "the same choice without a change");
        assertEquals(1, stopFlag(0).path("raises").asInt(), "one raise for the one change (its daemons: this one)");
    }

    @Test
    void badRequests_areRefused_andRaiseNothing() throws Exception {
        String[][] bad = {
            {"{}", "give \"devices\""},
            {"{\"size\": 4}", "give \"devices\""},
            {"{\"devices\": []}", "non-empty list"},
            {"{\"devices\": [[0,0],[0,0]]}", "listed twice"},
            {"{\"devices\": [[0,-1]]}", "is not a [worker, local] pair"},
            {"{\"size\": 4, \"devicesPerWorker\": 4, \"config\": {\"tp\": 2}}", "needs 2 devices, the change gives 4"},
            {"{\"size\": 4, \"devicesPerWorker\": 4, \"config\": {\"tp\": 0}}", "must be an integer in [1, 16384], got 0"},
            {"{\"size\": 4, \"devicesPerWorker\": 4, \"atStep\": -3}", "\"atStep\" must be a non-negative integer"},
            {"{\"size\": 4, \"devicesPerWorker\": 4, \"parallelizer\": {\"table\": {\"4\": {\"mp_size\": 3}}}}", "\"pp_size\" must be an integer >= 1"},
            {"[1]", "JSON object"},
        };
        for (String[] b : bad) {
            for (String route : List.of("resources", "parallelize")) { // parallelize reads the same request
                HttpResponse<String> r = send("POST", "/api/v1/jobs/j/" + route, b[0]);
                assertEquals(400, r.statusCode(), route + " " + b[0] + " -> " + r.body());
                assertTrue(r.body().contains(b[1]), b[0] + " -> " + r.body());
            }
        }
        assertFalse(stopFlag(0).path("raised").asBoolean());
        assertEquals(0, stopFlag(0).path("raises").asInt());
        HttpResponse<String> none = send("POST", "/api/v1/jobs/other/parallelize", "{\"size\": 2, \"devicesPerWorker\": 2}");
        assertEquals(400, none.statusCode());
        assertTrue(none.body().contains("no model in the request and none stored with job other"), none.body());
        assertEquals(400, send("GET", "/api/v1/jobs/j/stop?step=x", null).statusCode());
        assertEquals(405, send("POST", "/stop", "").statusCode());
        assertEquals(404, send("GET", "/api/v1/jobs/j/resources/nope", null).statusCode());
    }

    @Test
    void change_canBeCancelled_orTimesOut_andClearsTheFlag() throws Exception {
        String status = json.readTree(send("POST", "/api/v1/jobs/j/resources", "{\"size\": 2, \"devicesPerWorker\": 4}")
                .body()).path("status").asText();
        assertTrue(stopFlag(0).path("stop").asBoolean());
        HttpResponse<String> cancelled = send("DELETE", status, null);
        assertEquals(200, cancelled.statusCode(), cancelled.body());
        JsonNode c = json.readTree(cancelled.body());
        assertEquals("cancelled", c.path("state").asText());
        assertTrue(c.path("error").asText().contains("cancelled before every rank had saved"), c.toString());
        assertFalse(stopFlag(0).path("raised").asBoolean());

        String late = json.readTree(send("POST", "/api/v1/jobs/j/resources", "{\"size\": 2, \"devicesPerWorker\": 4, "
                + "\"saveTimeoutSeconds\": 0}").body()).path("status").asText();
        JsonNode t = json.readTree(send("GET", late + "?wait=true", null).body());
        assertEquals("failed", t.path("state").asText());
        assertTrue(t.path("error").asText().contains("did not all save within 0 s"), t.toString());
        assertFalse(stopFlag(0).path("raised").asBoolean());
        assertTrue(store.stat(io.tenplex.store.StorePath.parse("/job/j/load")).isEmpty());
    }
}
