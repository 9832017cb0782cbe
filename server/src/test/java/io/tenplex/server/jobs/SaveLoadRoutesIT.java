package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.Fixtures;
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
 * Saves and loads over HTTP on a real daemon: {@code GET .../load/<rank>} names the newest state of
 * the rank (its latest complete generation, or a reconfiguration's output when that is as new), and
 * a second, different save at a step the rank already sealed is a 409 with a reason.
 */
class SaveLoadRoutesIT {
    private static final String SEAL = "{\"world\": 1}";
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private LoneJobServer daemon;
    private TensorStore store;
    private String base;

    @BeforeEach
    void start() throws Exception {
        daemon = new LoneJobServer(64L << 20);
        store = daemon.store;
        base = daemon.url() + "/api/v1/jobs/j/";
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> save(long step, String text) throws Exception {
        Fixtures.putFile(store, "/job/j/save/0/rng_state", text.getBytes(StandardCharsets.UTF_8), true);
        return send(HttpRequest.newBuilder(URI.create(base + "saves/" + step + "/ranks/0"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(SEAL)));
    }

    private JsonNode load() throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + "load/0")).GET());
        assertEquals(200, r.statusCode(), r.body());
        return json.readTree(r.body());
    }

    @Test
    void load_afterASave_namesTheGeneration_andANewerOneThanTheReconfiguration() throws Exception {
        HttpResponse<String> none = send(HttpRequest.newBuilder(URI.create(base + "load/0")).GET());
        assertEquals(404, none.statusCode(), none.body());
        assertEquals("not_found", none.headers().firstValue("X-Tenplex-Error-Code").orElse(null));
        assertEquals(200, save(45, "step 45").statusCode());
        assertEquals("{\"path\":\"/job/j/generations/45/0\",\"step\":45,\"source\":\"generation\"}",
                load().toString());
        Fixtures.putFile(store, "/job/j/load/0/rng_state", "prepared".getBytes(StandardCharsets.UTF_8), true);
        Fixtures.putFile(store, "/job/j/iter", "45".getBytes(StandardCharsets.UTF_8), true);
        assertEquals("reconfiguration", load().path("source").asText(), "as new as the generation: its output wins");
        assertEquals(200, save(60, "step 60").statusCode());
        JsonNode l = load();
        assertEquals(60, l.path("step").asLong());
        assertEquals("generation", l.path("source").asText());
        assertEquals(400, send(HttpRequest.newBuilder(URI.create(base + "load/x")).GET()).statusCode());
    }

    @Test
    void aDifferentSaveAtTheSameStep_is409_andTheFirstStays() throws Exception {
        assertEquals(200, save(0, "first").statusCode());
        assertEquals(200, save(0, "first").statusCode(), "the same state again is a retry");
        HttpResponse<String> again = save(0, "second");
        assertEquals(409, again.statusCode(), again.body());
        assertEquals("conflict", again.headers().firstValue("X-Tenplex-Error-Code").orElse(null));
        assertTrue(again.body().contains("newer step"), again.body());
        assertEquals("first", new String(Fixtures.readAll(store, "/job/j/generations/0/0/rng_state"),
                StandardCharsets.UTF_8));
    }
}
