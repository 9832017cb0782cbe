package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * Which downtime reports a real daemon keeps: only reports of a generation a resource change of the job
 * moved here (or, while the change waits for the save, of a step the reporting rank sealed here), from a
 * rank of that change's old (stop, save) or new world, with marks inside the change's window, each
 * (rank, phase) once. Anything else is a 4xx naming what is wrong, and the change's split stays as it was.
 */
class DowntimeRulesIT {
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private Daemon daemon;
    private String base;
    private String change;
    private double posted;

    @BeforeEach
    void start() throws Exception {
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null));
        base = "http://127.0.0.1:" + daemon.address().getPort();
        seal("j", 5, 0, 1);
        posted = System.currentTimeMillis() / 1e3;
        change = post("j", "\"recover\": true");
        JsonNode done = json.readTree(send("GET", change + "?wait=true", null).body());
        assertEquals("done", done.path("state").asText(), done.toString());
        assertEquals(5, done.path("generation").asLong());
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

    /** Rank {@code rank} of a world of {@code world} saves and seals step {@code step} of {@code job}. */
    private void seal(String job, long step, int rank, int world) throws Exception {
        HttpResponse<String> put = send("PUT", "/api/v1/tensors/job/" + job + "/save/" + rank
                + "/w?dtype=float32&dims=2&replace=true", "abcdefgh");
        assertTrue(put.statusCode() == 200 || put.statusCode() == 201, put.body());
        HttpResponse<String> sealed = send("POST", "/api/v1/jobs/" + job + "/saves/" + step + "/ranks/" + rank,
                "{\"world\": " + world + ", \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": " + world
                        + ", \"devicesPerWorker\": " + world + "}}");
        assertEquals(200, sealed.statusCode(), sealed.body());
    }

    /** Posts a resource change of {@code job} to one device; answers its status path. */
    private String post(String job, String extra) throws Exception {
        HttpResponse<String> p = send("POST", "/api/v1/jobs/" + job + "/resources", "{\"size\": 1, \"devicesPerWorker\": "
                + "1, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}, " + extra + "}");
        assertEquals(202, p.statusCode(), p.body());
        return json.readTree(p.body()).path("status").asText();
    }

    /** A report of {@code rank} for {@code step}: phases with their times in seconds after the change's posting. */
    private String report(int rank, long step, String... phaseAndOffset) {
        StringBuilder b = new StringBuilder("{\"rank\": " + rank + ", \"step\": " + step + ", \"marks\": [");
        for (int i = 0; i < phaseAndOffset.length; i += 2) {
            b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "[\"%s\", %.6f]", phaseAndOffset[i],
                    posted + Double.parseDouble(phaseAndOffset[i + 1])));
        }
        return b.append("]}").toString();
    }

    private HttpResponse<String> reportTo(String job, String body) throws Exception {
        return send("POST", "/api/v1/jobs/" + job + "/downtime", body);
    }

    private void assertRefused(int status, String says, HttpResponse<String> got) {
        assertEquals(status, got.statusCode(), got.body());
        assertTrue(got.body().contains(says), "expected \"" + says + "\" in: " + got.body());
    }

    private String id(String statusPath) {
        return statusPath.substring(statusPath.lastIndexOf('/') + 1);
    }

    @Test
    void reportsOfStepsNoChangeMoved_are404_andEvictNothing() throws Exception {
        HttpResponse<String> real = reportTo("j", report(0, 5, "stop", "0.01", "save", "0.02"));
        assertEquals(200, real.statusCode(), real.body());
        String before = send("GET", "/api/v1/jobs/j/downtime", null).body();
        for (long step = 1_000_000_000_000L; step < 1_000_000_000_008L; step++) {
            assertRefused(404, "no resource change of job j moved generation " + step,
                    reportTo("j", report(0, step, "stop", "0.01")));
        }
        assertRefused(404, "moved generation 4", reportTo("j", report(0, 4, "stop", "0.01")));
        assertEquals(before, send("GET", "/api/v1/jobs/j/downtime", null).body(), "nothing was kept or evicted");
        HttpResponse<String> fresh = reportTo("j", report(0, 5, "relaunch", "0.03", "first_step", "0.04"));
        assertEquals(200, fresh.statusCode(), fresh.body());
        JsonNode answer = json.readTree(fresh.body());
        assertTrue(answer.path("kept").asBoolean(), fresh.body());
        assertEquals(id(change), answer.path("changes").get(0).asText());
        JsonNode d = json.readTree(send("GET", change, null).body()).path("downtime");
        assertEquals(1, d.path("ranksStopped").asInt(), d.toString());
        assertTrue(d.path("complete").asBoolean(), d.toString());
    }

    @Test
    void ranksOutsideTheChangesWorlds_are400() throws Exception {
        String before = send("GET", "/api/v1/jobs/j/downtime", null).body();
        assertRefused(400, "rank 1 is outside the old world of 1 rank", reportTo("j", report(1, 5, "stop", "0.01")));
        assertRefused(400, "rank 16383 is outside the new world of 1 rank",
                reportTo("j", report(16383, 5, "load", "0.01", "first_step", "0.02")));
        assertEquals(before, send("GET", "/api/v1/jobs/j/downtime", null).body(), "nothing was kept");
    }

    @Test
    void marksOutsideTheChangesWindow_are400() throws Exception {
        String before = send("GET", "/api/v1/jobs/j/downtime", null).body();
        assertRefused(400, "mark stop at 1.000000 is outside",
                reportTo("j", "{\"rank\": 0, \"step\": 5, \"marks\": [[\"stop\", 1.0]]}"));
        assertRefused(400, "mark stop", reportTo("j", report(0, 5, "stop", "-60")));
        assertRefused(400, "mark first_step", reportTo("j", report(0, 5, "load", "0.01", "first_step", "3600")));
        assertRefused(400, "\"spawn\"", reportTo("j", "{\"rank\": 0, \"step\": 5, \"spawn\": 1.0, \"marks\": []}"));
        assertEquals(before, send("GET", "/api/v1/jobs/j/downtime", null).body(), "nothing was kept");
        assertTrue(json.readTree(send("GET", change, null).body()).path("downtime").isMissingNode());
    }

    @Test
    void aPhaseReportedAgainWithAnotherTime_is409_theSameReportIs200() throws Exception {
        String first = report(0, 5, "stop", "0.01", "save", "0.02");
        assertEquals(200, reportTo("j", first).statusCode());
        String kept = send("GET", "/api/v1/jobs/j/downtime", null).body();
        assertEquals(200, reportTo("j", first).statusCode(), "a retry of the same report");
        assertRefused(409, "rank 0 already reported save", reportTo("j", report(0, 5, "save", "0.5")));
        assertEquals(kept, send("GET", "/api/v1/jobs/j/downtime", null).body(), "the first times stay");
    }

    @Test
    void whileTheChangeWaitsForTheSave_onlyARankThatSealedTheStepIsKept() throws Exception {
        seal("k", 5, 0, 2);
        seal("k", 5, 1, 2);
        posted = System.currentTimeMillis() / 1e3;
        String waiting = post("k", "\"saveTimeoutSeconds\": 60");
        seal("k", 7, 0, 2);
        HttpResponse<String> saved = reportTo("k", report(0, 7, "stop", "0.01", "save", "0.02"));
        assertEquals(200, saved.statusCode(), saved.body());
        assertEquals(id(waiting), json.readTree(saved.body()).path("changes").get(0).asText(), saved.body());
        assertRefused(404, "moved generation 7", reportTo("k", report(1, 7, "stop", "0.01")));
        assertRefused(404, "moved generation 8", reportTo("k", report(0, 8, "stop", "0.01")));
        assertRefused(404, "moved generation 5", reportTo("k", report(0, 5, "stop", "0.01")));
        assertRefused(409, "has not chosen its new configuration", reportTo("k", report(0, 7, "load", "0.03")));
        seal("k", 7, 1, 2);
        JsonNode done = json.readTree(send("GET", waiting + "?wait=true", null).body());
        assertEquals(7, done.path("generation").asLong(), done.toString());
        assertEquals(1, done.path("downtime").path("ranksStopped").asInt(), done.toString());
    }
}
