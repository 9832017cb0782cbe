package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code DELETE /api/v1/jobs/<job>} ({@code tenplex rm}) on two real daemons that know each other as
 * peers, each with its own checkpoint directory: an unknown job is refused, a running resource change
 * refuses (naming {@code tenplex cancel}) with nothing removed on either daemon; once cancelled, the
 * job's trees, stop flag and durable files are gone from both, each daemon's used bytes are back at
 * their baseline, and a new job of the same name starts clean (an older step than the removed one
 * loads).
 */
class JobRemovalIT {
    private static final Pattern USED = Pattern.compile("(?m)^tenplex_store_used_bytes (\\S+)$");
    private static final String JOB = "rmj";
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    @TempDir
    Path dir;

    private HttpResponse<String> send(DaemonProcess d, String method, String path, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(d.url() + path)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> send(DaemonProcess d, String method, String path, String body) throws Exception {
        return send(d, method, path, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    private long used(DaemonProcess d) throws Exception {
        Matcher m = USED.matcher(send(d, "GET", "/metrics", (byte[]) null).body());
        assertTrue(m.find());
        return (long) Double.parseDouble(m.group(1));
    }

    /** Both ranks save {@code w} (64 KiB of {@code fill}) at {@code step} on their daemons and seal it. */
    private void save(PeerDaemons c, long step, byte fill) throws Exception {
        byte[] w = new byte[64 << 10];
        Arrays.fill(w, fill);
        String seal = "{\"world\": 2, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 2, \"devices\": [[0, 0], [1, 0]]}}";
        for (int rank = 0; rank < 2; rank++) {
            DaemonProcess d = c.daemons.get(rank);
            HttpResponse<String> put = send(d, "PUT", "/api/v1/tensors/job/" + JOB + "/save/" + rank
                    + "/w.numpy.ndarray?dtype=u8&dims=" + w.length + "&replace=true", w);
            assertTrue(put.statusCode() / 100 == 2, put.body());
            HttpResponse<String> s = send(d, "POST", "/api/v1/jobs/" + JOB + "/saves/" + step + "/ranks/" + rank, seal);
            assertEquals(200, s.statusCode(), s.body());
        }
    }

    /**
     * {@code tenplex rm} racing a save of the real Python client a few milliseconds apart, 150 times over
     * REST and 150 times through shared memory (tests/python/remove_race.py): no 5xx, no generation
     * listed complete that does not load the bytes saved as it, no job name left stuck.
     */
    @Test
    void removeRacingSaves_overRestAndSharedMemory_neverListAGenerationThatDoesNotLoadItsBytes() throws Exception {
        try (DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "256m")) {
            for (String mode : java.util.List.of("rest", "shared")) {
                ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", Path.of(System.getProperty("user.dir"))
                        .getParent().resolve("tests/python/remove_race.py").toString(), "150", mode)
                        .redirectErrorStream(true);
                py.environment().put("TENPLEX_ADDR", d.url());
                Process p = py.start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                System.out.println(out);
                assertEquals(0, p.waitFor(), mode + ":\n" + out);
                assertTrue(out.strip().endsWith("OK"), out);
            }
            assertTrue(d.log().stream().noneMatch(l -> l.contains("internal error")), String.join("\n", d.log()));
        }
    }

    @Test
    void removeAcrossTwoDaemons_refusedWhileAChangeRuns_thenEverythingGone_andTheNameStartsClean() throws Exception {
        try (PeerDaemons c = PeerDaemons.start(2, "--memory-limit", "64m", "--checkpoint-dir",
                dir.resolve("{worker}").toString())) {
            DaemonProcess d0 = c.daemons.get(0);
            DaemonProcess d1 = c.daemons.get(1);
            long[] base = {used(d0), used(d1)};
            save(c, 10, (byte) 1);
            for (int w = 0; w < 2; w++) {
                c.daemons.get(w).awaitLine("durable flush job=" + JOB + " step=10", 60);
                assertTrue(Files.isDirectory(dir.resolve(w + "/jobs/" + JOB)), "worker " + w);
                assertTrue(used(c.daemons.get(w)) > base[w] + (64 << 10) - 1, "worker " + w);
            }

            HttpResponse<String> unknown = send(d0, "DELETE", "/api/v1/jobs/nosuch", (byte[]) null);
            assertEquals(404, unknown.statusCode(), unknown.body());
            assertTrue(unknown.body().contains("no job 'nosuch'") && unknown.body().contains(JOB), unknown.body());

            HttpResponse<String> change = send(d0, "POST", "/api/v1/jobs/" + JOB + "/resources",
                    "{\"size\": 1, \"devicesPerWorker\": 1, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 1}}");
            assertEquals(202, change.statusCode(), change.body());
            String id = json.readTree(change.body()).path("id").asText();
            HttpResponse<String> busy = send(d1, "DELETE", "/api/v1/jobs/" + JOB, (byte[]) null); // not the coordinator
            assertEquals(409, busy.statusCode(), busy.body());
            assertTrue(busy.body().contains("resource change " + id) && busy.body().contains("tenplex cancel " + JOB),
                    busy.body());
            for (int w = 0; w < 2; w++) {
                assertEquals(200, send(c.daemons.get(w), "GET", "/api/v1/stat/job/" + JOB + "/generations/10/" + w,
                        (byte[]) null).statusCode(), "nothing removed on worker " + w);
                assertTrue(Files.isDirectory(dir.resolve(w + "/jobs/" + JOB)), "worker " + w);
            }
            assertEquals(200, send(d0, "DELETE", "/api/v1/jobs/" + JOB + "/resources/" + id, (byte[]) null).statusCode());
            send(d0, "POST", "/api/v1/jobs/" + JOB + "/stop", "{\"reason\": \"left raised\"}");

            HttpResponse<String> rm = send(d1, "DELETE", "/api/v1/jobs/" + JOB, (byte[]) null);
            assertEquals(200, rm.statusCode(), rm.body());
            JsonNode a = json.readTree(rm.body());
            assertTrue(a.path("here").path("treeBytes").asLong() >= 64 << 10, rm.body());
            assertEquals(1, a.path("daemons").size(), rm.body());
            for (int w = 0; w < 2; w++) {
                DaemonProcess d = c.daemons.get(w);
                assertEquals(base[w], used(d), "worker " + w + ": memory given back");
                assertEquals(404, send(d, "GET", "/api/v1/stat/job/" + JOB, (byte[]) null).statusCode(), "worker " + w);
                assertFalse(Files.exists(dir.resolve(w + "/jobs/" + JOB)), "worker " + w + ": durable files removed");
                assertEquals(404, send(d, "GET", "/api/v1/jobs/" + JOB + "/stop", (byte[]) null).statusCode(),
                        "worker " + w + ": no stop flag, the job is unknown");
            }

            save(c, 5, (byte) 2); // a new job of the name: an older step than the removed one is its first generation
            for (int w = 0; w < 2; w++) {
                JsonNode load = json.readTree(send(c.daemons.get(w), "GET", "/api/v1/jobs/" + JOB + "/load/" + w,
                        (byte[]) null).body());
                assertEquals(5, load.path("step").asLong(), load.toString());
                HttpResponse<byte[]> t = http.send(HttpRequest.newBuilder(URI.create(c.daemons.get(w).url()
                        + "/api/v1/tensors" + load.path("path").asText() + "/w.numpy.ndarray")).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                byte[] want = new byte[64 << 10];
                Arrays.fill(want, (byte) 2);
                assertArrayEquals(want, t.body());
            }
        }
    }
}
