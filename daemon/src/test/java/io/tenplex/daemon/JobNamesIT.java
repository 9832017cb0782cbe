package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.server.RawHttp;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Job names at the edge, on two real daemons that know each other as peers, each with its own
 * checkpoint directory: an empty, {@code .}/{@code ..}, slash-containing (also percent-encoded), NUL
 * or over-long name is a 400 on every route that takes a job, never a 500 or a dropped connection, and
 * changes nothing on either daemon (trees, generations, durable files, stop flags); the jobs save their
 * next step as before. Names that are valid but need escaping in a URL travel between the daemons as
 * themselves: removing one touches no other job.
 */
class JobNamesIT {
    private static final String SEAL = "{\"world\": 2, \"config\": {\"tp\": 1, \"pp\": 1, \"dp\": 2, "
            + "\"devices\": [[0, 0], [1, 0]]}}";
    /** Invalid job names as they appear in a request's path (percent-encoded where a URL needs it). */
    static final List<String> BAD_NAMES = List.of("", ".", "..", "%2E", "%2e%2E", "%2F", "a%2Fb", "a%2F", "%2Fa",
            "%00", "a%00b", "x".repeat(300), "%C3%A9".repeat(128));
    /** Every job route, as method, the path after the job's name, and a body (null: none). */
    static final List<String[]> ROUTES = List.of(new String[] {"DELETE", "", null},
            new String[] {"DELETE", "/", null}, new String[] {"DELETE", "?local=true", null},
            new String[] {"DELETE", "?local=true&dryRun=true", null}, new String[] {"GET", "/stop", null},
            new String[] {"POST", "/stop", "{\"reason\": \"r\"}"}, new String[] {"DELETE", "/stop", null},
            new String[] {"POST", "/saves/10/ranks/0", SEAL},
            new String[] {"POST", "/saves/10/sealed", "{\"ranks\": [0], \"world\": 2}"},
            new String[] {"GET", "/generations", null}, new String[] {"GET", "/load/0", null},
            new String[] {"GET", "/shared", null}, new String[] {"POST", "/shared/saves/0", "{\"tensors\": []}"},
            new String[] {"POST", "/shared/saves/0/x/commit", "{\"step\": 10, \"world\": 1}"},
            new String[] {"POST", "/shared/loads/0", "{\"pid\": 1}"}, new String[] {"DELETE", "/shared/x", null},
            new String[] {"GET", "/downtime", null}, new String[] {"POST", "/downtime", "{\"rank\": 0}"},
            new String[] {"POST", "/reconfigure", "{}"}, new String[] {"POST", "/reconfigure?dryRun=true", "{}"},
            new String[] {"GET", "/reconfigurations/x", null}, new String[] {"POST", "/resources", "{\"size\": 1}"},
            new String[] {"GET", "/resources", null}, new String[] {"DELETE", "/resources/x", null},
            new String[] {"POST", "/parallelize", "{\"size\": 1}"}, new String[] {"GET", "/tiers", null},
            new String[] {"PUT", "/tiers", "{\"partners\": 1}"}, new String[] {"POST", "/parts", "{}"},
            new String[] {"POST", "/parts/p/commit", null}, new String[] {"GET", "/streams", null},
            new String[] {"DELETE", "/streams", null}, new String[] {"POST", "/streams/config?create=true", "{}"},
            new String[] {"GET", "/rehearsal", null}, new String[] {"DELETE", "/rehearsal", null});
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    @TempDir
    Path dir;

    private HttpResponse<byte[]> send(DaemonProcess d, String method, String path, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(d.url() + path)).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        return http.send(b.header("Content-Type", "application/json").build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    private static String enc(String job) {
        return URLEncoder.encode(job, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static byte[] fill(int n, int seed) {
        byte[] w = new byte[n];
        Arrays.fill(w, (byte) seed);
        return w;
    }

    /** Both ranks save {@code w} (16 KiB of {@code seed}) at {@code step} of {@code job} on their daemons and seal it. */
    private void save(PeerDaemons c, String job, long step, int seed) throws Exception {
        for (int rank = 0; rank < 2; rank++) {
            DaemonProcess d = c.daemons.get(rank);
            HttpResponse<byte[]> put = send(d, "PUT", "/api/v1/tensors/job/" + enc(job) + "/save/" + rank
                    + "/w?dtype=u8&dims=16384&replace=true", fill(16384, seed + rank));
            assertTrue(put.statusCode() / 100 == 2, text(put));
            HttpResponse<byte[]> s = send(d, "POST", "/api/v1/jobs/" + enc(job) + "/saves/" + step + "/ranks/" + rank,
                    SEAL.getBytes(StandardCharsets.UTF_8));
            assertEquals(200, s.statusCode(), job + ": " + text(s));
        }
    }

    /** Both daemons list {@code job} with {@code step} current, each rank loads its own bytes, its durable files are there. */
    private void assertKept(PeerDaemons c, String job, long step, int seed) throws Exception {
        for (int w = 0; w < 2; w++) {
            DaemonProcess d = c.daemons.get(w);
            JsonNode g = json.readTree(send(d, "GET", "/api/v1/jobs/" + enc(job) + "/generations", null).body());
            assertEquals(step, g.path("current").asLong(-1), "worker " + w + " job " + job + ": " + g);
            JsonNode load = json.readTree(send(d, "GET", "/api/v1/jobs/" + enc(job) + "/load/" + w, null).body());
            assertEquals(step, load.path("step").asLong(-1), load.toString());
            assertEquals("/job/" + job + "/generations/" + step + "/" + w, load.path("path").asText(), load.toString());
            HttpResponse<byte[]> t = send(d, "GET", "/api/v1/tensors/job/" + enc(job) + "/generations/" + step + "/" + w
                    + "/w", null);
            assertArrayEquals(fill(16384, seed + w), t.body(), "worker " + w + " job " + job);
            if (Files.isDirectory(dir.resolve(Integer.toString(w)))) { // started with a checkpoint directory
                assertTrue(Files.isDirectory(dir.resolve(w + "/jobs/" + job)), "worker " + w + ": durable files of " + job);
            }
        }
    }

    private String listing(DaemonProcess d) throws Exception {
        HttpResponse<byte[]> r = send(d, "GET", "/api/v1/dirs/?recursive=true", null);
        assertEquals(200, r.statusCode());
        return text(r);
    }

    private static PeerDaemons cluster(Path dir) throws Exception {
        return PeerDaemons.start(2, "--memory-limit", "64m", "--checkpoint-dir", dir.resolve("{worker}").toString());
    }

    private void awaitFlushed(PeerDaemons c, String job, long step) throws Exception {
        for (DaemonProcess d : c.daemons) {
            d.awaitLine("durable flush job=" + job + " step=" + step, 60);
        }
    }

    /** Without a checkpoint directory (with one, the durable tier refused the empty name, a 500). */
    @Test
    void removeEmptyName_returns400_andKeepsEveryJob() throws Exception {
        try (PeerDaemons c = PeerDaemons.start(2, "--memory-limit", "64m")) {
            save(c, "a", 10, 1);
            save(c, "b", 10, 5);
            List<String> before = List.of(listing(c.daemons.get(0)), listing(c.daemons.get(1)));
            List<String> wrong = new ArrayList<>();
            for (DaemonProcess d : c.daemons) {
                for (String target : List.of("/api/v1/jobs/", "/api/v1/jobs//", "/api/v1/jobs/%2F", "/api/v1/jobs/%2f/",
                        "/api/v1/jobs/.", "/api/v1/jobs/..", "/api/v1/jobs/%2E%2E", "/api/v1/jobs/%00",
                        "/api/v1/jobs/a%2F", "/api/v1/jobs/" + "x".repeat(300), "/api/v1/jobs/?local=true")) {
                    expect400(d, "DELETE", target, null, wrong);
                }
            }
            assertTrue(wrong.isEmpty(), String.join("\n", wrong));
            assertEquals(before, List.of(listing(c.daemons.get(0)), listing(c.daemons.get(1))), "a store changed");
            assertKept(c, "a", 10, 1);
            assertKept(c, "b", 10, 5);
            save(c, "a", 11, 2);
            save(c, "b", 11, 6);
            assertKept(c, "a", 11, 2);
            assertKept(c, "b", 11, 6);
        }
    }

    @Test
    void everyJobRoute_withAnInvalidName_returns400_andChangesNothing() throws Exception {
        try (PeerDaemons c = cluster(dir)) {
            save(c, "a", 10, 1);
            awaitFlushed(c, "a", 10);
            List<String> before = List.of(listing(c.daemons.get(0)), listing(c.daemons.get(1)));
            List<String> wrong = new ArrayList<>();
            DaemonProcess d = c.daemons.get(0);
            for (String name : BAD_NAMES) {
                for (String[] r : ROUTES) {
                    expect400(d, r[0], "/api/v1/jobs/" + name + r[1], r[2], wrong);
                }
                expect400(d, "GET", "/stop?job=" + name, null, wrong);
                expect400(d, "GET", "/stop?step=1&job=" + name, null, wrong);
                for (String m : List.of("GET", "DELETE")) {
                    expect400(d, m, "/api/v1/datasets/" + name, null, wrong);
                }
                expect400(d, "POST", "/api/v1/datasets/" + name + "/mount", "{}", wrong);
            }
            assertTrue(wrong.isEmpty(), wrong.size() + " answers were not 400:\n" + String.join("\n", wrong));
            assertEquals(before, List.of(listing(c.daemons.get(0)), listing(c.daemons.get(1))), "a store changed");
            JsonNode flag = json.readTree(send(d, "GET", "/api/v1/jobs/a/stop", null).body());
            assertTrue(!flag.path("raised").asBoolean(true), flag.toString());
            assertKept(c, "a", 10, 1);
            save(c, "a", 11, 2);
            assertKept(c, "a", 11, 2);
        }
    }

    @Test
    void validNamesThatNeedEscaping_travelBetweenDaemonsAsThemselves_andRemoveOnlyThemselves() throws Exception {
        try (PeerDaemons c = cluster(dir)) {
            List<String> names = List.of("x", "x%2F", "p q", "r?s#t", ".hidden", "é");
            int seed = 1;
            for (String job : names) {
                save(c, job, 10, seed);
                awaitFlushed(c, job, 10);
                seed += 4;
            }
            HttpResponse<byte[]> rm = send(c.daemons.get(1), "DELETE", "/api/v1/jobs/" + enc("x%2F"), null);
            assertEquals(200, rm.statusCode(), text(rm));
            HttpResponse<byte[]> rmHidden = send(c.daemons.get(0), "DELETE", "/api/v1/jobs/.hidden", null);
            assertEquals(200, rmHidden.statusCode(), text(rmHidden));
            for (DaemonProcess d : c.daemons) {
                for (String gone : List.of("x%2F", ".hidden")) {
                    assertEquals(404, send(d, "GET", "/api/v1/stat/job/" + enc(gone), null).statusCode(), gone);
                }
            }
            seed = 1;
            for (String job : names) {
                if (!job.equals("x%2F") && !job.equals(".hidden")) {
                    assertKept(c, job, 10, seed);
                }
                seed += 4;
            }
        }
    }

    /** Sends one request over a raw socket (the target exactly as given); notes anything but a 400. */
    private static void expect400(DaemonProcess d, String method, String target, String body, List<String> wrong)
            throws Exception {
        try (RawHttp h = new RawHttp(d.address().getPort())) {
            RawHttp.Response r = h.send(method, target, Map.of("Content-Type", "application/json"),
                    body == null ? null : body.getBytes(StandardCharsets.UTF_8));
            if (r.status() != 400 || !"bad_request".equals(r.headers().get("x-tenplex-error-code"))) {
                String t = r.text();
                wrong.add(method + " " + target.substring(0, Math.min(120, target.length())) + " -> " + r.status() + " "
                        + t.substring(0, Math.min(200, t.length())).strip());
            }
        } catch (java.io.IOException e) {
            wrong.add(method + " " + target + " -> " + e);
        }
    }
}
