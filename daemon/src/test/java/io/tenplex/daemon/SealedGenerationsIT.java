package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sealed generations never change, with a real daemon process: every REST write or delete under
 * {@code /job/<job>/generations/} or of {@code /job/<job>/generation} is 409 and leaves what
 * {@code load} returns and later saves as they were; and two trainers committing the same rank at
 * once through shared memory each get exactly their own bytes sealed.
 */
class SealedGenerationsIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final String JOB = "sealed";
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();
    private DaemonProcess daemon;

    @BeforeEach
    void start() throws Exception {
        daemon = DaemonProcess.start("--port", "0", "--memory-limit", "256m");
    }

    @AfterEach
    void stop() throws Exception {
        daemon.close();
    }

    @Test
    void writesAndDeletesUnderASealedGeneration_are409_andChangeNothing() throws Exception {
        byte[] first = f32(1, 2, 3, 4);
        byte[] other = f32(9, 9, 9, 9);
        assertEquals(201, putTensor("/job/" + JOB + "/save/0/w", first, false).statusCode());
        assertEquals(200, seal(1).statusCode());
        String gen = "/job/" + JOB + "/generations/1";

        List<HttpResponse<String>> refused = new ArrayList<>();
        refused.add(putTensor(gen + "/0/w", other, true));
        refused.add(send("PUT", "/api/v1/files" + gen + "/0/extra", "text/plain", "x".getBytes()));
        refused.add(send("DELETE", "/api/v1/tensors" + gen + "/0/w", null, null));
        refused.add(send("DELETE", "/api/v1/files" + gen + "/manifests/0.json", null, null));
        refused.add(send("PUT", "/api/v1/files" + gen + "/manifests/0.json?replace=true", "text/plain", "{}".getBytes()));
        refused.add(send("DELETE", "/api/v1/dirs" + gen + "?recursive=true", null, null));
        refused.add(send("DELETE", "/api/v1/dirs/job/" + JOB + "/generations?recursive=true", null, null));
        refused.add(send("PUT", "/api/v1/dirs/job/" + JOB + "/generations/7", null, null));
        refused.add(send("PUT", "/api/v1/files/job/" + JOB + "/generation?replace=true", "text/plain",
                "garbage".getBytes()));
        refused.add(send("PUT", "/api/v1/files/job/" + JOB + "/generation?replace=true", "text/plain",
                Long.toString(Long.MAX_VALUE).getBytes()));
        refused.add(send("DELETE", "/api/v1/files/job/" + JOB + "/generation", null, null));
        refused.add(send("POST", "/upload?path=" + gen + "/0/w&dtype=f32&dims=4&replace=true", "x-tensor", other));
        refused.add(send("DELETE", "/delete?path=" + gen + "/0/w", null, null));
        refused.add(send("DELETE", "/delete?path=/job/" + JOB + "/generation", null, null));
        refused.add(send("POST", "/upload?prefix=/job/" + JOB + "&replace=true", "application/x-tar",
                tar(List.of("save/0/fromtar", "generations/1/0/w"), List.of("t".getBytes(), other))));
        for (HttpResponse<String> r : refused) {
            assertEquals(409, r.statusCode(), r.request().method() + " " + r.request().uri() + ": " + r.body());
        }
        assertTrue(refused.get(0).body().contains("sealed generations"), refused.get(0).body());

        assertEquals(404, send("GET", "/api/v1/files/job/" + JOB + "/save/0/fromtar", null, null).statusCode(),
                "a refused archive stores none of its entries");
        assertArrayEquals(first, bytes("/api/v1/tensors" + gen + "/0/w"));
        assertEquals(200, send("GET", "/api/v1/files" + gen + "/manifests/0.json", null, null).statusCode());
        assertEquals(1, json.readTree(send("GET", "/api/v1/jobs/" + JOB + "/load/0", null, null).body()).path("step")
                .asLong());
        assertEquals(200, seal(1).statusCode(), "a retry of the seal still finds its manifest");

        assertEquals(200, putTensor("/job/" + JOB + "/save/0/w", other, true).statusCode());
        HttpResponse<String> next = seal(2);
        assertEquals(200, next.statusCode(), next.body());
        assertEquals("2", send("GET", "/api/v1/files/job/" + JOB + "/generation", null, null).body().strip());
        assertArrayEquals(other, bytes("/api/v1/tensors/job/" + JOB + "/generations/2/0/w"));
        assertEquals(200, send("DELETE", "/api/v1/dirs/job/" + JOB + "?recursive=true", null, null).statusCode(),
                "the job's whole tree can still be removed");
    }

    /** A zombie trainer and its replacement commit rank 0 at steps s and s+1 at once, 150 times. */
    @Test
    void concurrentCommitsOfOneRank_eachSealExactlyTheirOwnBytes() throws Exception {
        ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/commit_race.py").toString(),
                "150").redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDR", daemon.url());
        Process p = py.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), output + "\n" + String.join("\n", daemon.log()));
        assertTrue(output.strip().endsWith("OK"), output);
    }

    private HttpResponse<String> seal(long step) throws Exception {
        return send("POST", "/api/v1/jobs/" + JOB + "/saves/" + step + "/ranks/0", "application/json",
                "{\"world\": 1}".getBytes());
    }

    private HttpResponse<String> putTensor(String path, byte[] body, boolean replace) throws Exception {
        return send("PUT", "/api/v1/tensors" + path + "?dtype=f32&dims=4" + (replace ? "&replace=true" : ""),
                "application/octet-stream", body);
    }

    private HttpResponse<String> send(String method, String path, String type, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(daemon.url() + path)).method(method,
                body == null ? BodyPublishers.noBody() : BodyPublishers.ofByteArray(body));
        if (type != null) {
            b.header("Content-Type", type);
        }
        return http.send(b.build(), BodyHandlers.ofString());
    }

    private byte[] bytes(String path) throws Exception {
        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create(daemon.url() + path)).build(),
                BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode());
        return r.body();
    }

    private static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            b.putFloat(f);
        }
        return b.array();
    }

    /** An archive of {@code names} with {@code bodies}, in that order. */
    private static byte[] tar(List<String> names, List<byte[]> bodies) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            for (int i = 0; i < names.size(); i++) {
                TarArchiveEntry e = new TarArchiveEntry(names.get(i));
                e.setSize(bodies.get(i).length);
                t.putArchiveEntry(e);
                t.write(bodies.get(i));
                t.closeArchiveEntry();
            }
        }
        return out.toByteArray();
    }
}
