package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every error answer names its kind in X-Tenplex-Error-Code; the store routes answer JSON bodies, others text. */
class ErrorCodesTest extends ServedStoreTest {
    private final ObjectMapper json = new ObjectMapper();

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(1 << 20, 4096), 1024);
    }

    @Override
    RestServer newServer(TensorStore store) {
        RestServer s = new RestServer(store, null);
        s.addControl("/api/v1/refuse", req -> CompletableFuture.completedFuture(
                ControlHandler.Response.text(409, "refused by its handler")));
        s.addControl("/api/v1/fail", req -> CompletableFuture.failedFuture(
                new IllegalArgumentException("a \"quoted\" reason")));
        return s;
    }

    @BeforeEach
    void fill() {
        Fixtures.putF32(store, "/m/t", 2);
        Fixtures.putFile(store, "/m/f", new byte[] {1}, false);
    }

    @Test
    void apiErrors_haveStatusCodeHeader_andJsonBody() throws Exception {
        try (RawHttp c = new RawHttp(server.port())) {
            api(c.send("GET", "/api/v1/files/m/t", Map.of(), null), 404, "wrong_type", "is a tensor");
            api(c.send("GET", "/api/v1/tensors/m/f", Map.of(), null), 404, "wrong_type", "no tensor at /m/f");
            api(c.send("GET", "/api/v1/files/m/none", Map.of(), null), 404, "not_found", "node not exist");
            api(c.send("GET", "/api/v1/files/m", Map.of(), null), 409, "is_a_directory", "is a directory");
            api(c.send("PUT", "/api/v1/files/m/f", Map.of(), new byte[1]), 409, "exists", "exists");
            api(c.send("PUT", "/api/v1/files/m/f/x", Map.of(), new byte[1]), 409, "not_a_directory",
                    "not a directory");
            api(c.send("PUT", "/api/v1/files/m/t.meta", Map.of(), new byte[1]), 409, "exists", "sidecar");
            api(c.send("DELETE", "/api/v1/dirs/m", Map.of(), null), 409, "not_empty", "not empty");
            api(c.send("DELETE", "/api/v1/dirs/m/f", Map.of(), null), 409, "not_a_directory", "not a directory");
            api(c.send("DELETE", "/api/v1/files/m/t", Map.of(), null), 409, "wrong_type", "not a file");
            api(c.send("DELETE", "/api/v1/tensors/m", Map.of(), null), 409, "is_a_directory", "not a tensor");
            api(c.send("GET", "/api/v1/dirs/m/f", Map.of(), null), 409, "not_a_directory", "not a directory");
            api(c.send("GET", "/api/v1/tensors/m/t?range=0:9", Map.of(), null), 400, "bad_request", "out of bounds");
            api(c.send("PATCH", "/api/v1/tensors/m/t", Map.of(), null), 405, "method_not_allowed", "not allowed");
            api(c.send("GET", "/api/v1/nothing", Map.of(), null), 404, "not_found", "no API resource");
            RawHttp.Response r = c.send("POST", "/api/v1/refuse", Map.of("Content-Type", "application/json"),
                    "{}".getBytes());
            assertEquals(409, r.status());
            assertEquals("conflict", r.headers().get("x-tenplex-error-code"));
        }
    }

    @Test
    void compatAndControlErrors_keepTheirTextBodies_andGainTheHeader() throws Exception {
        try (RawHttp c = new RawHttp(server.port())) {
            RawHttp.Response r = c.send("POST", "/upload?path=/m/f", Map.of(), new byte[1]);
            assertEquals(409, r.status());
            assertEquals("exists", r.headers().get("x-tenplex-error-code"));
            assertEquals("text/plain; charset=utf-8", r.headers().get("content-type"));
            assertEquals("/m/f exists (send x-replace: true or ?replace=true to replace it)\n", r.text());
            RawHttp.Response gone = c.send("DELETE", "/delete?path=/m/none", Map.of(), null);
            assertEquals(417, gone.status());
            assertEquals("node not exist", gone.text());
            assertEquals("not_found", gone.headers().get("x-tenplex-error-code"));
            RawHttp.Response failed = c.send("POST", "/api/v1/fail", Map.of("Content-Type", "application/json"),
                    "{}".getBytes());
            assertEquals(400, failed.status());
            assertEquals("bad_request", failed.headers().get("x-tenplex-error-code"));
            assertEquals("a \"quoted\" reason\n", failed.text(), "control routes keep their text bodies");
            RawHttp.Response none = c.send("GET", "/nowhere", Map.of(), null);
            assertEquals("not_found", none.headers().get("x-tenplex-error-code"));
            assertEquals("no route for GET /nowhere\n", none.text());
        }
    }

    private void api(RawHttp.Response r, int status, String code, String reasonPart) throws Exception {
        assertEquals(status, r.status(), r.text());
        assertEquals(code, r.headers().get("x-tenplex-error-code"), r.text());
        assertEquals("application/json", r.headers().get("content-type"));
        JsonNode body = json.readTree(r.body());
        assertEquals(code, body.path("code").asText(), r.text());
        String error = body.path("error").asText();
        assertEquals(true, error.contains(reasonPart), () -> "'" + error + "' should contain '" + reasonPart + "'");
    }
}
