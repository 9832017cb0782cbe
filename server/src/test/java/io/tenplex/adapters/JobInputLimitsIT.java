package io.tenplex.adapters;

import io.tenplex.server.jobs.LoneJobServer;
import io.tenplex.jobs.StopFlags;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.server.control.Device;
import io.tenplex.server.control.Piece;
import io.tenplex.server.control.Range;
import io.tenplex.server.control.Region;
import io.tenplex.server.control.Shard;
import io.tenplex.server.control.WorkerPlan;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bad sizes and values on the job routes of a real daemon over HTTP: each is a 400 whose message
 * carries the value and the limit, before anything is allocated or planned, and the daemon keeps
 * answering; planning runs off the event loop.
 */
class JobInputLimitsIT {
    private static final Model MODEL = MegatronLayout.model(MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16));
    private final HttpClient http = HttpClient.newHttpClient();
    private LoneJobServer daemon;
    private TensorStore store;
    private String base;

    @BeforeEach
    void start() throws Exception {
        daemon = new LoneJobServer(64L << 20);
        store = daemon.store;
        base = daemon.url();
        Fixtures.putFile(store, "/job/j/model.json", ModelSpecJson.write(MODEL).getBytes(StandardCharsets.UTF_8), false);
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    private HttpResponse<String> post(String path, String type, byte[] body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", type)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> postJson(String path, String body) throws Exception {
        return post(path, "application/json", body.getBytes(StandardCharsets.UTF_8));
    }

    private static void assertRefused(HttpResponse<String> r, String... parts) {
        assertEquals(400, r.statusCode(), r.body());
        for (String p : parts) {
            assertTrue(r.body().contains(p), "'" + p + "' not in: " + r.body());
        }
    }

    private static String dryRun(String to) {
        return "{\"from\": {\"tp\": 2, \"pp\": 1, \"dp\": 1, \"devicesPerWorker\": 2}, \"to\": " + to + "}";
    }

    @Test
    void reconfigure_deviceThatIsNotAPair_is400() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", dryRun("{\"devices\": [[0]]}")),
                "[0]", "[worker, local]");
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", dryRun("{\"tp\": 2, \"devices\": [[0, 0]]}")),
                "must list 2");
    }

    @Test
    void reconfigure_hugeDataParallelism_is400_atOnce() throws Exception {
        long t = System.nanoTime();
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", dryRun("{\"dp\": 5e6, \"devicesPerWorker\": 8}")),
                "\"dp\"", "5000000", "16384");
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true",
                dryRun("{\"tp\": 16384, \"dp\": 16384, \"devicesPerWorker\": 8}")), "268435456", "16384");
        assertTrue(System.nanoTime() - t < 2_000_000_000L, "refusing took " + (System.nanoTime() - t) / 1e6 + " ms");
    }

    @Test
    void reconfigure_planOverTheShardLimit_is400() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", dryRun("{\"dp\": 4096, \"devicesPerWorker\": 8}")),
                "851968 shards", "524288");
    }

    @Test
    void parallelize_hugeSize_is400() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/parallelize", "{\"size\": 2147483647, \"devicesPerWorker\": 1}"),
                "2147483647", "16384");
        assertRefused(postJson("/api/v1/jobs/j/parallelize", "{\"size\": 8, \"devicesPerWorker\": 1, "
                + "\"firstWorker\": 2147483647}"), "firstWorker", "2147483647");
        assertEquals(200, postJson("/api/v1/jobs/j/parallelize", "{\"size\": 4, \"devicesPerWorker\": 2}").statusCode());
    }

    @Test
    void nullForARequiredNumber_is400_notADivisionByZero() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", dryRun("{\"dp\": 2, \"devicesPerWorker\": null}")),
                "devicesPerWorker");
        assertRefused(postJson("/api/v1/jobs/j/reconfigure?dryRun=true", "{\"from\": {\"tp\": 2, \"devicesPerWorker\": "
                + "null}, \"to\": {\"tp\": 2, \"devicesPerWorker\": 2}}"), "devicesPerWorker");
        assertRefused(postJson("/api/v1/jobs/j/parallelize", "{\"size\": null, \"devicesPerWorker\": null}"), "size");
        assertRefused(postJson("/api/v1/jobs/j/resources", "{\"size\": 2, \"devicesPerWorker\": null}"),
                "devicesPerWorker");
        assertRefused(postJson("/api/v1/jobs/j/saves/5/ranks/0", "{\"world\": null}"), "world");
    }

    @Test
    void stopFlags_reasonsAreBounded_andSoAreTheJobsThatKeepCounts() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/stop", "{\"atStep\": 1, \"reason\": \"" + "r".repeat(1025) + "\"}"),
                "1025", "1024");
        StopFlags flags = new StopFlags();
        for (int i = 0; i < StopFlags.MAX_JOBS; i++) {
            flags.raise("job" + i, java.util.OptionalLong.empty(), "r");
        }
        IllegalArgumentException full = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> flags.raise("one-more", java.util.OptionalLong.empty(), "r"));
        assertTrue(full.getMessage().contains("4096"), full.getMessage());
        flags.clear("job0"); // a job whose flag is cleared makes room
        flags.raise("one-more", java.util.OptionalLong.empty(), "r");
        assertEquals(1, flags.raises("one-more"));
        assertEquals(0, flags.raises("job0"));
    }

    @Test
    void resources_timeoutThatOverflows_is400() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/resources", "{\"size\": 2, \"devicesPerWorker\": 2, "
                + "\"saveTimeoutSeconds\": 9223372036854775807}"), "9223372036854775807", "604800");
    }

    @Test
    void seal_hugeWorld_is400() throws Exception {
        assertRefused(postJson("/api/v1/jobs/j/saves/9223372036854775807/ranks/0", "{\"world\": 2147483647}"),
                "2147483647", "16384");
    }

    @Test
    void part_whoseSourceRankExceedsItsDevices_is400_andStartsNothing() throws Exception {
        Piece piece = Piece.newBuilder().setKind(3).setSourceRank(7).setSourceKey("w")
                .setSource(Region.newBuilder().addRanges(Range.newBuilder().setStart(0).setStop(4))).addDestOffset(0)
                .setBytes(16).addReplicas(7).build();
        WorkerPlan wp = WorkerPlan.newBuilder().setJob("j").setPlanId("bad").setWorker(0)
                .addSourceDevices(Device.newBuilder().setWorker(0).setLocal(0))
                .addShards(Shard.newBuilder().setDestRank(0).setKey("w").setTensor("w").setDtype("f32").addShape(4)
                        .setDestDevice(Device.newBuilder()).addPieces(piece)).build();
        assertRefused(post("/api/v1/jobs/j/parts", io.tenplex.server.jobs.HttpDaemonClient.PROTOBUF, wp.toByteArray()), "source_rank 7",
                "[0, 1)");
        assertEquals(404, http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/jobs/j/parts/bad")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode());
    }

    @Test
    void planning_runsOffTheEventLoop_healthAnswersMeanwhile() throws Exception {
        // a large allowed plan takes a while; every event loop keeps answering while it is made: new
        // connections go round the loops, so some of these share the loop that took the plan request
        CompletableFuture<HttpResponse<String>> plan = http.sendAsync(HttpRequest.newBuilder(URI.create(base
                + "/api/v1/jobs/j/reconfigure?dryRun=true")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(dryRun("{\"tp\": 1, \"dp\": 2048, \"devicesPerWorker\": 8}")))
                .build(), HttpResponse.BodyHandlers.ofString());
        int port = Integer.parseInt(base.substring(base.lastIndexOf(':') + 1));
        int answered = 0;
        for (int i = 0; i < 32 && !plan.isDone(); i++) {
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                s.setSoTimeout(1000); // an event loop blocked by planning would not answer in time
                s.getOutputStream().write("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                        .getBytes(StandardCharsets.US_ASCII));
                String first = new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(),
                        StandardCharsets.US_ASCII)).readLine();
                assertTrue(first != null && first.contains(" 200 "), "health answered " + first);
            }
            answered += plan.isDone() ? 0 : 1;
        }
        assertTrue(answered >= 8, "only " + answered + " health checks while planning: the test proves nothing");
        assertEquals(200, plan.get().statusCode(), plan.get().body());
    }
}
