package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dataset source options of a real tenplexd process: without {@code --data-root} a mount of a
 * local index is refused with 403 saying how to allow it; with it the same mount loads and reads.
 */
class DatasetSourcesIT {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> send(String url, String method, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60));
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void localIndexes_needADataRoot(@TempDir Path dir) throws Exception {
        Path data = Files.writeString(dir.resolve("lines.txt"), "a\nbb\nccc\ndddd\n");
        Path index = Files.writeString(dir.resolve("index.txt"), "1\n" + data + " 4\n0 2\n2 5\n5 9\n9 14\n");
        String mount = "{\"index\": \"" + index + "\", \"globalBatch\": 2, \"dpSize\": 2, \"shuffle\": false}";
        try (DaemonProcess off = DaemonProcess.start("--port", "0", "--memory-limit", "64m")) {
            HttpResponse<String> r = send(off.url() + "/api/v1/datasets/d/mount", "POST", mount);
            assertEquals(403, r.statusCode(), r.body());
            assertTrue(r.body().contains("--data-root"), r.body());
            assertEquals(404, send(off.url() + "/api/v1/datasets/d", "GET", null).statusCode());
        }
        try (DaemonProcess on = DaemonProcess.start("--port", "0", "--memory-limit", "64m", "--data-root",
                dir.toString())) {
            String roots = "dataRoots=[" + dir.toAbsolutePath() + "]";
            assertTrue(on.log().stream().anyMatch(l -> l.contains(roots)),
                    String.join("\n", on.log()));
            HttpResponse<String> r = send(on.url() + "/api/v1/datasets/d/mount", "POST", mount);
            assertEquals(200, r.statusCode(), r.body());
            HttpResponse<String> status = send(on.url() + "/api/v1/datasets/d?wait=30000", "GET", null);
            assertTrue(status.body().contains("\"state\":\"loaded\""), status.body());
            assertEquals("bb\ndddd\n", send(on.url() + "/api/v1/datasets/d/files/dataset/rank-1/samples", "GET", null)
                    .body());
            HttpResponse<String> outside = send(on.url() + "/api/v1/datasets/e/mount", "POST",
                    mount.replace(index.toString(), "/etc/passwd"));
            assertEquals(403, outside.statusCode(), outside.body());
            assertFalse(outside.body().contains("root:"), outside.body());
        }
    }
}
