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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job's pending resource change and its raised stop flag are part of its durable state: a daemon
 * process SIGKILLed and started again on its {@code --checkpoint-dir} answers the same change (same id,
 * still waiting for the save, its flag up for the same step), which then commits when the ranks save;
 * a stop flag raised alone is up again; what was cancelled or cleared before the kill stays gone.
 */
class ChangesKeptIT {
    private static final String CONFIG = "{\"tp\": 1, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 1}";
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final ObjectMapper json = new ObjectMapper();
    private String base;

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).method(method,
                body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode ok(String method, String path, String body) throws Exception {
        HttpResponse<String> r = send(method, path, body);
        assertTrue(r.statusCode() / 100 == 2, method + " " + path + ": " + r.statusCode() + " " + r.body());
        return r.body().isEmpty() ? json.nullNode() : json.readTree(r.body());
    }

    /** The one rank of {@code job} saves its state and seals {@code step}. */
    private void save(String job, long step) throws Exception {
        ok("PUT", "/api/v1/tensors/job/" + job + "/save/0/w?dtype=float32&dims=2&replace=true", "abcdefgh");
        ok("POST", "/api/v1/jobs/" + job + "/saves/" + step + "/ranks/0", "{\"world\": 1, \"config\": " + CONFIG + "}");
    }

    /** Polls (up to 30 s) until generation {@code step} of {@code job} is durable. */
    private void awaitDurable(String job, long step) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            for (JsonNode g : ok("GET", "/api/v1/jobs/" + job + "/generations", null).path("generations")) {
                if (g.path("step").asLong() == step && g.path("levels").toString().contains("durable")) {
                    return;
                }
            }
            assertTrue(System.nanoTime() < deadline, "generation " + step + " of " + job + " never durable");
            LockSupport.parkNanos(20_000_000L); // polling the flush
        }
    }

    @Test
    void pendingChangeAndRaisedFlag_surviveASigkill_andTheChangeCommitsAfterIt(@TempDir Path dir) throws Exception {
        String port = DaemonProcess.reservePeers(1).port(0);
        String[] args = {"--port", port, "--memory-limit", "256m", "--checkpoint-dir", dir.resolve("ckpt").toString()};
        DaemonProcess d = DaemonProcess.start(args);
        try {
            base = d.url();
            for (String job : new String[] {"kept", "flagged", "gone"}) {
                save(job, 10);
                awaitDurable(job, 10);
            }
            String status = ok("POST", "/api/v1/jobs/kept/resources", "{\"size\": 1, \"devicesPerWorker\": 1, "
                    + "\"atStep\": 28, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}}").path("status").asText();
            ok("POST", "/api/v1/jobs/flagged/stop", "{\"atStep\": 40, \"reason\": \"schedule: stop at step 40\"}");
            String cancelled = ok("POST", "/api/v1/jobs/gone/resources", "{\"size\": 1, \"devicesPerWorker\": 1}")
                    .path("status").asText();
            ok("DELETE", cancelled, null);
            assertTrue(Files.exists(dir.resolve("ckpt")), "the checkpoint directory holds the kept state");

            d.close(); // SIGKILL
            d = DaemonProcess.start(args);
            base = d.url();
            JsonNode again = ok("GET", status, null);
            assertEquals("stopping", again.path("state").asText(), again.toString());
            assertTrue(again.path("events").get(0).asText().contains("started again after the daemon restarted"),
                    again.toString());
            JsonNode flag = ok("GET", "/api/v1/jobs/kept/stop?step=27", null);
            assertTrue(flag.path("raised").asBoolean() && !flag.path("stop").asBoolean(), flag.toString());
            assertEquals(28, flag.path("atStep").asLong(), flag.toString());
            JsonNode alone = ok("GET", "/api/v1/jobs/flagged/stop?step=40", null);
            assertTrue(alone.path("stop").asBoolean(), alone.toString());
            assertEquals("schedule: stop at step 40", alone.path("reason").asText());
            assertEquals(0, ok("GET", "/api/v1/jobs/gone/resources", null).path("changes").size(), "cancelled: gone");
            assertFalse(ok("GET", "/api/v1/jobs/gone/stop", null).path("raised").asBoolean());

            save("kept", 28); // the rank reached the change's step after the restart
            JsonNode done = ok("GET", status + "?wait=true", null);
            assertEquals("done", done.path("state").asText(), done.toString());
            assertEquals(28, done.path("generation").asLong(), done.toString());
            ok("DELETE", "/api/v1/jobs/flagged/stop", null);

            d.close(); // what ended or was cleared is not started again
            d = DaemonProcess.start(args);
            base = d.url();
            assertEquals(404, send("GET", status, null).statusCode());
            assertFalse(ok("GET", "/api/v1/jobs/kept/stop", null).path("raised").asBoolean());
            assertFalse(ok("GET", "/api/v1/jobs/flagged/stop", null).path("raised").asBoolean());
        } finally {
            d.close();
        }
    }
}
