package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A misspelt job name against a real daemon: a resource change, stop-flag queries (the job API and
 * the prototype's {@code /stop?job=}) and the generations answer 404 with the known jobs and raise
 * nothing; a first save still creates a job, and so does {@code PUT /api/v1/dirs/job/<job>}.
 */
class UnknownJobIT {
    private final HttpClient http = HttpClient.newHttpClient();
    private Daemon daemon;
    private String base;

    @BeforeEach
    void start() throws Exception {
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null));
        base = "http://127.0.0.1:" + daemon.address().getPort();
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void assertUnknown(HttpResponse<String> r, String job, String known) {
        assertEquals(404, r.statusCode(), r.body());
        assertEquals("not_found", r.headers().firstValue("X-Tenplex-Error-Code").orElse(null), r.body());
        assertTrue(r.body().contains("no job '" + job + "' on this daemon (known jobs: " + known + ")"), r.body());
    }

    @Test
    void typo_is404_withTheKnownJobs_andRaisesNothing() throws Exception {
        assertEquals(201, send("PUT", "/api/v1/files/job/gpt/model.json", "{}").statusCode());
        assertEquals(201, send("PUT", "/api/v1/dirs/job/bert", null).statusCode());
        assertUnknown(send("POST", "/api/v1/jobs/gtp/resources", "{\"size\": 2, \"devicesPerWorker\": 2}"), "gtp",
                "bert, gpt");
        assertUnknown(send("GET", "/api/v1/jobs/gtp/stop?step=3", null), "gtp", "bert, gpt");
        assertUnknown(send("GET", "/stop?job=gtp", null), "gtp", "bert, gpt");
        assertUnknown(send("GET", "/api/v1/jobs/gtp/generations", null), "gtp", "bert, gpt");
        assertEquals("run", send("GET", "/stop", null).body(), "no flag was raised");
        assertEquals(200, send("GET", "/api/v1/jobs/gpt/stop", null).statusCode());
        assertEquals("run", send("GET", "/stop?job=bert", null).body());
    }

    @Test
    void firstSave_createsTheJob() throws Exception {
        assertUnknown(send("GET", "/api/v1/jobs/fresh/stop", null), "fresh", "none");
        assertEquals(201, send("PUT", "/api/v1/files/job/fresh/save/0/iteration.int", "1").statusCode());
        HttpResponse<String> sealed = send("POST", "/api/v1/jobs/fresh/saves/1/ranks/0", "{\"world\": 1, "
                + "\"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 1}}");
        assertEquals(200, sealed.statusCode(), sealed.body());
        assertTrue(send("GET", "/api/v1/jobs/fresh/generations", null).body().contains("\"current\":1"));
        HttpResponse<String> flag = send("GET", "/api/v1/jobs/fresh/stop?step=1", null);
        assertEquals(200, flag.statusCode(), flag.body());
        HttpResponse<String> change = send("POST", "/api/v1/jobs/fresh/resources", "{\"size\": 1, "
                + "\"devicesPerWorker\": 1, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}}");
        assertEquals(202, change.statusCode(), change.body());
    }
}
