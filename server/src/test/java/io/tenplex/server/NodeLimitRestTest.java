package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every way of adding nodes beyond the store's limit is a 507 naming it, stores nothing and keeps the connection. */
class NodeLimitRestTest extends ServedStoreTest {

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(1 << 20, 1 << 16), 1024);
    }

    @Test
    void uploadsAndMkdirsBeyondTheLimit_are507_storeNothing_andKeepTheConnection() throws Exception {
        store.limitNodes(3);
        try (RawHttp c = new RawHttp(port)) {
            assertEquals(201, c.send("PUT", "/api/v1/files/a/f", Map.of(), new byte[] {1}).status());
            long used = store.allocator().usedBytes();
            Map<String, byte[]> two = new LinkedHashMap<>();
            two.put("x/y", new byte[] {1});
            two.put("x/z", new byte[0]);
            refused(c, c.send("PUT", "/api/v1/files/b/c/g", Map.of(), new byte[] {2}));
            refused(c, c.send("POST", "/upload?prefix=/t", Map.of("Content-Type", "application/x-tar"), Tar.of(two)));
            refused(c, c.send("PUT", "/api/v1/dirs/d/e", Map.of(), null));
            assertEquals(used, store.allocator().usedBytes());
            assertEquals(2, store.totals()[3]);
            assertEquals(1, store.walk(StorePath.root(), false).size());
            assertEquals(201, c.send("PUT", "/api/v1/files/a/g", Map.of(), new byte[] {3}).status());
        }
    }

    private static void refused(RawHttp c, RawHttp.Response r) throws Exception {
        assertEquals(507, r.status(), r.text());
        assertTrue(r.text().contains("more directories and entries, and the store holds 2 of the 3"), r.text());
        assertEquals("insufficient_storage", r.headers().get("x-tenplex-error-code"), r.headers().toString());
        assertEquals(200, c.send("GET", "/api/v1/health", Map.of(), null).status(), "the connection goes on");
    }
}
