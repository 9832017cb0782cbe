package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlockChecksums;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * Uploads land in memory that is not zeroed first and may be recycled from a replaced tensor: a blob
 * is published only once every byte arrived, a short or refused upload releases it unpublished, and
 * a replacement reads back its own bytes, never the old ones.
 */
class UploadMemoryTest extends ServedStoreTest {
    private static final int SIZE = 3 << 20;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(256L << 20), 64 << 10);
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
        Await.until("used bytes back at " + used, () -> store.allocator().usedBytes() == used);
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
        Await.until("used bytes back at " + used, () -> store.allocator().usedBytes() == used);
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

    @Test
    void freshUploadsAfterADelete_publishOnlyWholeBodies_andNeverShowAnotherTensorsBytes() throws Exception {
        String dims = "dtype=u8&dims=1536,2048"; // SIZE bytes, read back as rows and as a strided region
        String put = "/api/v1/tensors/f?" + dims;
        long baseline = store.allocator().usedBytes();
        byte[] a = random(SIZE, 20);
        assertEquals(201, put(put, Map.of(), a).status());
        assertEquals(200, request("DELETE", "/api/v1/tensors/f").status());
        assertEquals(baseline, store.allocator().usedBytes());
        long pooled = store.allocator().pooledBytes();
        assertTrue(pooled >= SIZE, "the deleted tensor's memory is kept for reuse: " + pooled);

        // B: the same size, cut short; its blob is A's recycled memory, never published
        byte[] b = random(SIZE, 21);
        try (RawHttp c = new RawHttp(port)) {
            startUpload(c, put, b, SIZE / 2 - 12_345);
            Await.until("B's blob taken from the pool", () -> store.allocator().pooledBytes() < pooled);
            assertUnpublished("/f", "B's upload is under way");
        } // the client goes away mid-body
        Await.until("used bytes back at " + baseline, () -> store.allocator().usedBytes() == baseline);
        assertEquals(0, store.allocator().liveBlobs());
        assertUnpublished("/f", "B was cut short");
        long pooledAgain = store.allocator().pooledBytes();
        assertTrue(pooledAgain >= SIZE, "B's memory is kept for reuse: " + pooledAgain);

        // C: lands in the memory that holds B's first half and A's second half
        byte[] c = random(SIZE, 22);
        try (RawHttp conn = new RawHttp(port)) {
            startUpload(conn, put, c, SIZE / 3);
            Await.until("C's blob taken from the pool", () -> store.allocator().pooledBytes() < pooledAgain);
            assertUnpublished("/f", "C's upload is under way");
            conn.write(Arrays.copyOfRange(c, SIZE / 3, SIZE));
            RawHttp.Response r = conn.read();
            assertEquals(201, r.status(), r.text());
        }
        assertArrayEquals(c, Fixtures.readAll(store, "/f"));
        assertArrayEquals(c, request("GET", "/api/v1/tensors/f").body());
        assertArrayEquals(region(c, 2048, 100, 300, 1000, 1500),
                request("GET", "/api/v1/tensors/f?range=100:300,1000:1500").body());
        assertBlockChecksumsOf(c, "/f");
        assertEquals(baseline + SIZE, store.allocator().usedBytes());
        assertEquals(1, store.allocator().liveBlobs());
    }

    /**
     * Sends the head of an upload of {@code body} and its first {@code n} bytes, nothing more, in one
     * write: the daemon's first read holds the head and the body's first bytes (copied into the blob),
     * the later reads land in place.
     */
    private static void startUpload(RawHttp c, String target, byte[] body, int n) throws Exception {
        byte[] head = ("PUT " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        byte[] start = Arrays.copyOf(head, head.length + n);
        System.arraycopy(body, 0, start, head.length, n);
        c.write(start);
    }

    private void assertUnpublished(String path, String when) throws Exception {
        assertTrue(store.stat(StorePath.parse(path)).isEmpty(), when + ": " + path + " exists");
        RawHttp.Response r = request("GET", "/api/v1/tensors" + path);
        assertEquals(404, r.status(), when + ": GET answered " + r.status() + " with " + r.body().length + " bytes");
    }

    private RawHttp.Response request(String method, String target) throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            return c.send(method, target, Map.of(), null);
        }
    }

    /** Rows {@code [r0, r1)} and columns {@code [c0, c1)} of a row-major u8 matrix of {@code cols} columns. */
    private static byte[] region(byte[] m, int cols, int r0, int r1, int c0, int c1) {
        byte[] out = new byte[(r1 - r0) * (c1 - c0)];
        for (int r = r0; r < r1; r++) {
            System.arraycopy(m, r * cols + c0, out, (r - r0) * (c1 - c0), c1 - c0);
        }
        return out;
    }

    /** The stored block checksums (64 KiB blocks) are those of {@code data}. */
    private void assertBlockChecksumsOf(byte[] data, String path) {
        int block = 64 << 10;
        try (DataRef ref = store.open(StorePath.parse(path))) {
            BlockChecksums sums = ref.checksums();
            assertEquals((data.length + block - 1) / block, sums.blockCount());
            for (int i = 0; i < sums.blockCount(); i++) {
                CRC32C crc = new CRC32C();
                crc.update(data, i * block, Math.min(block, data.length - i * block));
                assertEquals((int) crc.getValue(), sums.block(i), path + " block " + i);
            }
        }
    }
}
