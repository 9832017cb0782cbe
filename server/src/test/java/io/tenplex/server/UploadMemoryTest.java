package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Uploads land in memory that is not zeroed first and may be recycled from a replaced tensor: a blob
 * is published only once every byte arrived, a short or refused upload releases it unpublished, and
 * a replacement reads back its own bytes, never the old ones.
 */
class UploadMemoryTest {
    private static final int SIZE = 3 << 20;
    private TensorStore store;
    private RestServer server;
    private int port;

    @BeforeEach
    void start() throws Exception {
        store = new TensorStore(new Allocator(256L << 20), 64 << 10);
        server = new RestServer(store, null);
        port = server.start("127.0.0.1", 0).getPort();
    }

    @AfterEach
    void stop() {
        server.close();
        store.close(); // throws if an upload left memory behind
    }

    @AfterAll
    static void noNettyLeaks() {
        NettyLeaks.assertNone();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private RawHttp.Response put(String target, Map<String, String> headers, byte[] body) throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            return c.send("PUT", target, headers, body);
        }
    }

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long end = System.nanoTime() + 20_000_000_000L;
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < end, "timed out waiting for " + what);
            Thread.sleep(5); // polling the condition
        }
    }

    @Test
    void truncatedUpload_leavesTheStoreUnchanged_andTheUsedBytesWhereTheyWere() throws Exception {
        byte[] old = random(SIZE, 1);
        assertEquals(201, put("/api/v1/tensors/t?dtype=u8&dims=" + SIZE, Map.of(), old).status());
        store.allocator().allocateForOverwrite(SIZE).release(); // a chunk in the pool, as after a replace
        long used = store.allocator().usedBytes();
        try (RawHttp c = new RawHttp(port)) {
            c.write(("PUT /api/v1/tensors/t?dtype=u8&dims=" + SIZE + "&replace=true HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Length: " + SIZE + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            c.write(Arrays.copyOf(random(SIZE, 2), SIZE - 4097)); // then the client goes away
        }
        await("used bytes back at " + used, () -> store.allocator().usedBytes() == used);
        assertArrayEquals(old, Fixtures.readAll(store, "/t"));
        assertEquals(1, store.allocator().liveBlobs());
    }

    @Test
    void refusedUpload_releasesItsMemoryUnpublished() throws Exception {
        long used = store.allocator().usedBytes();
        RawHttp.Response r = put("/api/v1/tensors/u?dtype=u8&dims=" + SIZE, Map.of("x-tensor-crc32c", "00000000"),
                random(SIZE, 3));
        assertEquals(400, r.status(), r.text());
        assertTrue(store.stat(StorePath.parse("/u")).isEmpty());
        assertEquals(used, store.allocator().usedBytes());
    }

    @Test
    void tarWithATruncatedEntry_is400_andStoresNothing() throws Exception {
        byte[] whole = Tar.of(Map.of("a", random(3000, 4)));
        byte[] cut = Arrays.copyOf(whole, 512 + 1024 + 1024); // header, 1024 of 3000 bytes, one zero block
        Arrays.fill(cut, 512 + 1024, cut.length, (byte) 0);
        long used = store.allocator().usedBytes();
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.send("POST", "/upload?prefix=/cut", Map.of("Content-Type", "application/x-tar"), cut);
            assertEquals(400, r.status(), r.text());
            assertTrue(r.text().contains("truncated") || r.text().contains("tar"), r.text());
        }
        assertTrue(store.stat(StorePath.parse("/cut/a")).isEmpty());
        await("used bytes back at " + used, () -> store.allocator().usedBytes() == used);
    }

    @Test
    void replacements_reuseTheReplacedMemory_andReadBackTheirOwnBytes() throws Exception {
        for (int round = 0; round < 4; round++) {
            byte[] data = random(SIZE, 10 + round);
            RawHttp.Response r = put("/api/v1/tensors/w?dtype=u8&dims=" + SIZE + "&replace=true", Map.of(), data);
            assertEquals(round == 0 ? 201 : 200, r.status(), r.text());
            assertArrayEquals(data, Fixtures.readAll(store, "/w"), "round " + round);
            assertEquals(SIZE, store.allocator().usedBytes());
            if (round > 0) {
                assertTrue(store.allocator().pooledBytes() >= SIZE, "the replaced tensor's memory is kept");
            }
        }
        try (RawHttp c = new RawHttp(port)) {
            String metrics = c.send("GET", "/metrics", Map.of(), new byte[0]).text();
            assertTrue(metrics.contains("tenplex_store_pooled_bytes " + (double) store.allocator().pooledBytes()),
                    metrics);
        }
    }
}
