package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Locale;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /api/v1/jobs/<job>/downtime} against a real daemon: malformed, oversized, unknown-job and
 * unknown-phase reports are refused with 4xx and leave the change's split as it was; accepted reports of a
 * change's generation make its split, in the change's status, the job's downtime status and, once
 * complete, {@code /metrics} (once).
 */
class DowntimeRouteIT {
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private Daemon daemon;
    private String base;
    private String change;
    /** Just before the change's posting, and from then to its end (seconds): the ranks' marks lie in between. */
    private double t0;
    private double ended;

    @BeforeEach
    void start() throws Exception {
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null));
        base = "http://127.0.0.1:" + daemon.address().getPort();
        assertEquals(201, send("PUT", "/api/v1/tensors/job/j/save/0/w?dtype=float32&dims=2", "abcdefgh").statusCode());
        HttpResponse<String> sealed = send("POST", "/api/v1/jobs/j/saves/5/ranks/0", "{\"world\": 1, \"config\": "
                + "{\"tp\": 1, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 1}}");
        assertEquals(200, sealed.statusCode(), sealed.body());
        t0 = System.currentTimeMillis() / 1e3;
        HttpResponse<String> posted = send("POST", "/api/v1/jobs/j/resources", "{\"size\": 1, \"devicesPerWorker\": 1, "
                + "\"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}, \"recover\": true}");
        assertEquals(202, posted.statusCode(), posted.body());
        change = json.readTree(posted.body()).path("status").asText();
        JsonNode done = json.readTree(send("GET", change + "?wait=true", null).body());
        assertEquals("done", done.path("state").asText(), done.toString());
        assertEquals(5, done.path("generation").asLong());
        ended = System.currentTimeMillis() / 1e3 - t0;
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A report of rank {@code rank} for step 5: phases with their times, seconds after the change's posting. */
    private String marks(int rank, String... phaseAndOffset) {
        double now = t0;
        StringBuilder b = new StringBuilder("{\"rank\": " + rank + ", \"step\": 5, \"marks\": [");
        for (int i = 0; i < phaseAndOffset.length; i += 2) {
            b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "[\"%s\", %.6f]", phaseAndOffset[i],
                    now + Double.parseDouble(phaseAndOffset[i + 1])));
        }
        return b.append("]}").toString();
    }

    /** The count of a histogram's observations (of {@code phase}, when given) in a strict parse of /metrics. */
    private double metric(String family, String phase) throws Exception {
        PromText.Family f = PromText.parse(send("GET", "/metrics", null).body()).get(family);
        assertTrue(f != null, family + " is served");
        return f.sum(family + "_count", phase == null ? java.util.Map.of() : java.util.Map.of("phase", phase));
    }

    @Test
    void badReports_are4xx_andChangeNothing() throws Exception {
        String before = send("GET", "/api/v1/jobs/j/downtime", null).body();
        assertFalse(json.readTree(send("GET", change, null).body()).has("downtime"));
        String pad = "x".repeat(17 * 1024);
        Object[][] refused = {
            {"{\"rank\": 0, \"step\": 5, \"marks\": [[\"stop\", 1", 400, "JSON"},
            {"{\"rank\": 0, \"step\": 5, \"marks\": [], \"pad\": \"" + pad + "\"}", 413, "16384 bytes"},
            {marks(0, "warmup", "0"), 400, "unknown downtime phase \"warmup\""},
            {marks(0, "stop", "0", "stop", "1"), 400, "marked twice"},
            {"{\"rank\": 99999, \"step\": 5, \"marks\": []}", 400, "\"rank\""},
            {"{\"rank\": 0, \"step\": 5, \"marks\": [[\"stop\", -1]]}", 400, "got -1"},
            {"[1, 2]", 400, "JSON object"},
            {"", 400, "JSON object"}};
        for (Object[] r : refused) {
            HttpResponse<String> got = send("POST", "/api/v1/jobs/j/downtime", (String) r[0]);
            assertEquals(r[1], got.statusCode(), got.body());
            assertTrue(got.body().contains((String) r[2]), got.body());
        }
        HttpResponse<String> unknown = send("POST", "/api/v1/jobs/nosuch/downtime", marks(0, "stop", "0"));
        assertEquals(404, unknown.statusCode(), unknown.body());
        assertTrue(unknown.body().contains("no job 'nosuch'"), unknown.body());
        assertEquals(405, send("PUT", "/api/v1/jobs/j/downtime", marks(0, "stop", "0")).statusCode());
        assertEquals(404, send("POST", "/api/v1/jobs/j/downtime/0", marks(0, "stop", "0")).statusCode());
        assertEquals(before, send("GET", "/api/v1/jobs/j/downtime", null).body(), "nothing was kept");
        assertFalse(json.readTree(send("GET", change, null).body()).has("downtime"));
    }

    @Test
    void reports_makeTheSplit_inTheChange_theJobsStatus_andMetricsOnce() throws Exception {
        double count = metric("tenplex_reconfiguration_downtime_seconds", null);
        HttpResponse<String> old = send("POST", "/api/v1/jobs/j/downtime", marks(0, "stop", "0", "save", "0.1"));
        assertEquals(200, old.statusCode(), old.body());
        JsonNode answer = json.readTree(old.body());
        assertTrue(answer.path("kept").asBoolean(), old.body());
        assertEquals(change.substring(change.lastIndexOf('/') + 1), answer.path("changes").get(0).asText());
        JsonNode partial = json.readTree(send("GET", change, null).body()).path("downtime");
        assertFalse(partial.path("complete").asBoolean(), partial.toString());
        assertEquals(1, partial.path("ranksStopped").asInt());
        assertEquals(count, metric("tenplex_reconfiguration_downtime_seconds", null), "not complete yet");

        HttpResponse<String> fresh = send("POST", "/api/v1/jobs/j/downtime", marks(0, "relaunch", "" + (ended + 0.5),
                "load", "" + (ended + 0.6), "first_step", "" + (ended + 0.8)));
        assertEquals(200, fresh.statusCode(), fresh.body());
        JsonNode d = json.readTree(send("GET", change, null).body()).path("downtime");
        assertTrue(d.path("complete").asBoolean(), d.toString());
        assertEquals(ended + 0.8, d.path("seconds").asDouble(), 1e-3, "after the daemon's commit, which came before");
        double sum = 0;
        for (JsonNode v : d.path("phases")) {
            assertTrue(v.asDouble() >= 0, d.toString());
            sum += v.asDouble();
        }
        assertEquals(d.path("seconds").asDouble(), sum, 1e-6);
        assertEquals(0.1, d.path("phases").path("save").asDouble(), 1e-3);
        assertEquals(d, json.readTree(send("GET", "/api/v1/jobs/j/downtime", null).body()).path("reconfigurations")
                .get(0).path("downtime"));
        assertEquals(count + 1, metric("tenplex_reconfiguration_downtime_seconds", null));
        send("GET", change, null);
        assertEquals(count + 1, metric("tenplex_reconfiguration_downtime_seconds", null), "observed once");
        assertTrue(metric("tenplex_reconfiguration_downtime_phase_seconds", "relaunch") >= 1);
    }
}
