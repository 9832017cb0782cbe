package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HDF5 and NetCDF sources of a real tenplexd process over REST: a chunked, compressed dataset, a
 * NetCDF-4 variable, and fixed-size and record variables of NetCDF classic files (CDF-1, CDF-2,
 * CDF-5) mounted by URL and read back bit for bit as h5py and netCDF4 read them, the classic ones
 * across a change of data parallelism; bad files and names answer 400 {@code bad_request} (a file
 * outside the data roots 403) and leave no mount behind. ADIOS2 BP4 and BP5 variables likewise, against
 * the rows ADIOS2's own reader dumped.
 */
class ArraySourcesIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<byte[]> send(String url, String method, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60));
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static String mount(String url, int globalBatch, int dp) {
        return "{\"index\": \"" + url + "\", \"globalBatch\": " + globalBatch + ", \"dpSize\": " + dp
                + ", \"seed\": 9, \"samplesPerFile\": 5}";
    }

    @Test
    void arraysMountedByUrl_readBackOverRest_andBadFilesAre400(@TempDir Path dir) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/make_arrays.py").toString(),
                dir.toString()).redirectErrorStream(true).start();
        String made = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), made);
        try (DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--data-root", dir.toString())) {
            for (JsonNode a : JSON.readTree(dir.resolve("manifest.json").toFile())) {
                if (List.of("h5_shuf_i64", "h5_inner_chunks", "h5_partial", "nc_temp").contains(a.get("id").asText())) {
                    assertRowsOverRest(d, dir, a);
                }
            }
            for (String bad : List.of("hdf5://" + dir.resolve("arrays.h5") + "#/no_such", "hdf5://" + dir.resolve("arrays.h5")
                    + "#/grp", "hdf5://" + dir.resolve("bad/truncated.h5") + "#/gzip_f64", "hdf5://"
                    + dir.resolve("bad/notes.h5") + "#/x", "hdf5://" + dir.resolve("bad/scaleoffset.h5") + "#/x",
                    "hdf5://" + dir.resolve("bad/classic.nc") + "#/v", "netcdf://" + dir.resolve("bad/classic.nc") + "#w",
                    "hdf5:relative.h5#/x")) {
                HttpResponse<byte[]> r = send(d.url() + "/api/v1/datasets/bad/mount", "POST", mount(bad, 2, 1));
                assertEquals(400, r.statusCode(), bad + ": " + new String(r.body(), StandardCharsets.UTF_8));
                assertEquals("bad_request", r.headers().firstValue("X-Tenplex-Error-Code").orElse(""), bad);
                assertEquals(404, send(d.url() + "/api/v1/datasets/bad", "GET", null).statusCode(), bad);
            }
            HttpResponse<byte[]> outside = send(d.url() + "/api/v1/datasets/bad/mount", "POST", mount("hdf5:///etc/hosts#/x", 2, 1));
            assertEquals(403, outside.statusCode());
        }
    }

    /**
     * Filter bombs ({@code tests/python/make_filter_bombs.py}): a deflate chunk that inflates to 1 GiB
     * or an LZ4 chunk whose header claims 1 GiB in the first block is a 400 at the mount; one beyond
     * the first block fails its own samples (the load ends {@code failed}, naming the chunk) while the
     * other rows load; the daemon keeps answering.
     */
    @Test
    void filterBombs_are400AtTheMount_orFailTheirOwnSamples_andTheDaemonStaysUp(@TempDir Path dir) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/make_filter_bombs.py").toString(),
                dir.toString()).redirectErrorStream(true).start();
        String made = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), made);
        try (DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--data-root", dir.toString())) {
            for (String bomb : List.of("deflate.h5#/first", "lz4.h5#/bomb")) {
                HttpResponse<byte[]> r = send(d.url() + "/api/v1/datasets/bomb/mount", "POST",
                        mount("hdf5://" + dir.resolve(bomb), 2, 1));
                String body = new String(r.body(), StandardCharsets.UTF_8);
                assertEquals(400, r.statusCode(), bomb + ": " + body);
                assertTrue(body.contains("chunk decodes to 1073741824 bytes or more") || body.contains("a deflate chunk "
                        + "decodes to"), body);
                assertEquals(404, send(d.url() + "/api/v1/datasets/bomb", "GET", null).statusCode(), bomb);
            }
            HttpResponse<byte[]> m = send(d.url() + "/api/v1/datasets/later/mount", "POST",
                    mount("hdf5://" + dir.resolve("deflate.h5") + "#/later", 64, 1));
            assertEquals(200, m.statusCode(), new String(m.body(), StandardCharsets.UTF_8));
            String status = new String(send(d.url() + "/api/v1/datasets/later?wait=60000", "GET", null).body(),
                    StandardCharsets.UTF_8);
            assertTrue(status.contains("\"state\":\"failed\"") && status.contains("rows 1024..2048: a deflate chunk "
                    + "decodes to 1048641 bytes or more") && status.contains("and 1023 more samples"), status);
            assertEquals(200, send(d.url() + "/api/v1/health", "GET", null).statusCode());
            assertEquals(200, send(d.url() + "/api/v1/datasets/sound/mount", "POST",
                    mount("hdf5://" + dir.resolve("lz4.h5") + "#/sound", 4, 1)).statusCode());
        }
    }

    @Test
    void classicVariables_ofEveryFormat_readBackOverRest_acrossADataParallelChange(@TempDir Path dir) throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/make_classic.py").toString(),
                dir.toString()).redirectErrorStream(true).start();
        String made = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), made);
        List<String> ids = List.of("cdf1_fix_i2", "cdf1_rec_f4", "cdf2_fix_fill", "cdf2_rec_i1", "cdf5_fix_u8", "cdf5_rec_u2",
                "cdf5_rec_i8", "cdf1_lone_i1");
        int seen = 0;
        try (DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--data-root", dir.toString())) {
            for (JsonNode a : JSON.readTree(dir.resolve("manifest.json").toFile())) {
                if (ids.contains(a.get("id").asText())) {
                    String job = a.get("id").asText().replace('_', '-');
                    String url = a.get("url").asText();
                    assertRanksOverRest(d, dir, a, job, "{\"index\": \"" + url + "\", \"globalBatch\": 4, \"dpSize\": 2, "
                            + "\"seed\": 9, \"samplesPerFile\": 5}", 4, 2, 0);
                    assertRanksOverRest(d, dir, a, job, "{\"index\": \"" + url + "\", \"globalBatch\": 6, \"dpSize\": 3, "
                            + "\"seed\": 9, \"samplesPerFile\": 5, \"progress\": 12}", 6, 3, 12);
                    seen++;
                }
            }
        }
        assertEquals(ids.size(), seen);
    }

    /**
     * ADIOS2 variables of the BP4 and BP5 files ADIOS2 2.10 wrote (datasets/src/test/resources/adios2): a
     * float array written in three blocks per step, integer arrays, a 3-D array and a 1-D one, each over
     * three steps, mounted by URL at dp 2 and then dp 3, every rank's samples equal to the rows ADIOS2's
     * own reader dumped; what the reader refuses (a string, a compressed array, a missing variable, a file
     * that is no directory) is a 400 that names it, a directory outside the data roots a 403.
     */
    @Test
    void adios2Variables_ofBp4AndBp5_readBackOverRest_acrossADataParallelChange(@TempDir Path dir) throws Exception {
        Path made = ROOT.resolve("datasets/src/test/resources/adios2");
        // variable, rows (3 steps of the first dimension), bytes a row
        List<List<Object>> vars = List.of(List.of("blocks", 30, 24), List.of("i8", 21, 3), List.of("u64", 21, 24),
                List.of("cube", 9, 64), List.of("vec", 15, 4));
        Files.createDirectories(dir.resolve("data").resolve("expect"));
        int seen = 0;
        try (DaemonProcess d = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--data-root",
                dir.resolve("data").toString())) {
            for (String bp : List.of("bp4", "bp5")) {
                copyTree(made.resolve(bp + ".bp"), dir.resolve("data").resolve(bp + ".bp"));
                for (List<Object> v : vars) {
                    String id = bp + "_" + v.get(0);
                    Files.copy(made.resolve(bp + ".ref").resolve(v.get(0) + ".bin"), dir.resolve("data/expect/" + id + ".bin"));
                    String url = "adios2://" + dir.resolve("data").resolve(bp + ".bp") + "#" + v.get(0);
                    JsonNode a = JSON.createObjectNode().put("id", id).put("url", url).put("rows", (int) v.get(1))
                            .put("rowBytes", (int) v.get(2));
                    String job = id.replace('_', '-');
                    assertRanksOverRest(d, dir.resolve("data"), a, job, "{\"index\": \"" + url + "\", \"globalBatch\": 4, "
                            + "\"dpSize\": 2, \"seed\": 9, \"samplesPerFile\": 5}", 4, 2, 0);
                    assertRanksOverRest(d, dir.resolve("data"), a, job, "{\"index\": \"" + url + "\", \"globalBatch\": 6, "
                            + "\"dpSize\": 3, \"seed\": 9, \"samplesPerFile\": 5, \"progress\": 12}", 6, 3, 12);
                    seen++;
                }
            }
            String bp5 = "adios2://" + dir.resolve("data/bp5.bp");
            for (String[] bad : new String[][] {{bp5 + "#text", "400", "is refused: it is a global value"}, {bp5 + "#squeezed", "400", "compress"},
                    {bp5 + "#nope", "400", "has no variable 'nope'"}, {"adios2://" + dir.resolve("data/expect/bp5_i8.bin")
                    + "#i8", "403", "is not a readable directory below"}, {"adios2://" + made.resolve("bp5.bp") + "#i8", "403",
                    "is not a readable directory below"}}) {
                HttpResponse<byte[]> r = send(d.url() + "/api/v1/datasets/bad/mount", "POST", mount(bad[0], 4, 2));
                String body = new String(r.body(), StandardCharsets.UTF_8);
                assertEquals(Integer.parseInt(bad[1]), r.statusCode(), bad[0] + ": " + body);
                assertTrue(body.contains(bad[2]), bad[0] + ": " + body);
            }
            assertEquals(404, send(d.url() + "/api/v1/datasets/bad", "GET", null).statusCode(), "no mount left behind");
        }
        assertEquals(2 * vars.size(), seen);
    }

    private static void copyTree(Path from, Path to) throws java.io.IOException {
        Files.createDirectories(to);
        try (java.util.stream.Stream<Path> files = Files.list(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, to.resolve(f.getFileName().toString()));
            }
        }
    }

    /**
     * Mounts (or remounts) {@code job} with {@code body} (global batch {@code g}, {@code dp} ranks, at
     * {@code progress}) and compares each rank's samples with the expected rows (as netCDF4 or ADIOS2 read them).
     */
    private void assertRanksOverRest(DaemonProcess d, Path dir, JsonNode a, String job, String body, int g, int dp,
            int progress)
            throws Exception {
        HttpResponse<byte[]> m = send(d.url() + "/api/v1/datasets/" + job + "/mount", "POST", body);
        assertEquals(200, m.statusCode(), new String(m.body(), StandardCharsets.UTF_8));
        String status = new String(send(d.url() + "/api/v1/datasets/" + job + "?wait=30000", "GET", null).body(),
                StandardCharsets.UTF_8);
        assertTrue(status.contains("\"state\":\"loaded\""), status);
        byte[] rows = Files.readAllBytes(dir.resolve("expect/" + a.get("id").asText() + ".bin"));
        int rowBytes = a.get("rowBytes").asInt();
        int total = 0;
        for (int r = 0; r < dp; r++) {
            String files = d.url() + "/api/v1/datasets/" + job + "/files/dataset/rank-" + r + "/";
            long[] ids = npyLongs(send(files + "ids.npy", "GET", null).body());
            ByteArrayOutputStream want = new ByteArrayOutputStream();
            for (long id : ids) {
                want.write(rows, (int) id * rowBytes, rowBytes);
            }
            assertTrue(ids.length > 0, job);
            total += ids.length;
            assertArrayEquals(want.toByteArray(), send(files + "samples", "GET", null).body(), job + " rank " + r + " of " + dp);
        }
        int n = a.get("rows").asInt();
        int epoch = n / g * g; // whole batches; progress beyond an epoch is in a later one
        assertEquals(epoch - progress % epoch, total, job + ": the rest of the epoch's whole batches of " + n + " rows");
    }

    /** Mounts one array on 2 ranks and compares each rank's samples with the rows h5py/netCDF4 read. */
    private void assertRowsOverRest(DaemonProcess d, Path dir, JsonNode a) throws Exception {
        String job = a.get("id").asText().replace('_', '-');
        HttpResponse<byte[]> m = send(d.url() + "/api/v1/datasets/" + job + "/mount", "POST", mount(a.get("url").asText(), 4, 2));
        assertEquals(200, m.statusCode(), new String(m.body(), StandardCharsets.UTF_8));
        String status = new String(send(d.url() + "/api/v1/datasets/" + job + "?wait=30000", "GET", null).body(),
                StandardCharsets.UTF_8);
        assertTrue(status.contains("\"state\":\"loaded\""), status);
        byte[] rows = Files.readAllBytes(dir.resolve("expect/" + a.get("id").asText() + ".bin"));
        int rowBytes = a.get("rowBytes").asInt();
        for (int r = 0; r < 2; r++) {
            String files = d.url() + "/api/v1/datasets/" + job + "/files/dataset/rank-" + r + "/";
            long[] ids = npyLongs(send(files + "ids.npy", "GET", null).body());
            ByteArrayOutputStream want = new ByteArrayOutputStream();
            for (long id : ids) {
                want.write(rows, (int) id * rowBytes, rowBytes);
            }
            assertTrue(ids.length > 0, job);
            assertArrayEquals(want.toByteArray(), send(files + "samples", "GET", null).body(), job + " rank " + r);
        }
    }

    /** The int64 values of a one-dimensional little-endian .npy file. */
    private static long[] npyLongs(byte[] npy) {
        int header = 10 + ((npy[8] & 0xff) | (npy[9] & 0xff) << 8);
        java.nio.LongBuffer b = java.nio.ByteBuffer.wrap(npy, header, npy.length - header)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer();
        long[] out = new long[b.remaining()];
        b.get(out);
        return Arrays.copyOf(out, out.length);
    }
}
