package io.tenplex.server;

import io.tenplex.store.Npy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Crc32c;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Uploads that carry the client's {@code x-tensor-crc32c} over a real loopback socket: a matching
 * checksum stores, a mismatch is a 400 that leaves the store (and a replaced entry) as it was, and
 * no memory stays reserved.
 */
class UploadChecksumTest extends ServedStoreTest {
    private final HttpClient http = HttpClient.newHttpClient();
    private String base;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(1 << 20, 4096), 1024);
    }

    @BeforeEach
    void address() {
        base = base();
    }

    private HttpResponse<String> put(String path, String type, byte[] body, String crc) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", type)
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
        if (crc != null) {
            b.header("x-tensor-crc32c", crc);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private byte[] get(String path) throws Exception {
        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, r.statusCode());
        return r.body();
    }

    private static String crc(byte[] b) {
        return Crc32c.hex(Crc32c.of(ByteBuffer.wrap(b)));
    }

    @Test
    void tensorUpload_checksumMatches_isStored_mismatch_is400_andTheEarlierContentStays() throws Exception {
        byte[] first = Fixtures.iota32(12);
        assertEquals(201, put("/api/v1/tensors/a/w?dtype=f32&dims=3,4", "application/octet-stream", first, crc(first))
                .statusCode());
        byte[] second = first.clone();
        second[5] ^= 1;
        HttpResponse<String> bad = put("/api/v1/tensors/a/w?dtype=f32&dims=3,4&replace=true", "application/octet-stream",
                second, crc(first)); // the checksum of other bytes: damaged on the way
        assertEquals(400, bad.statusCode(), bad.body());
        assertTrue(bad.body().contains("checksum mismatch") && bad.body().contains(crc(first)), bad.body());
        assertArrayEquals(first, get("/api/v1/tensors/a/w"));
        assertEquals(200, put("/api/v1/tensors/a/w?dtype=f32&dims=3,4&replace=true", "application/octet-stream", second,
                crc(second)).statusCode());
        assertArrayEquals(second, get("/api/v1/tensors/a/w"));
    }

    @Test
    void fileUpload_mismatch_is400_andNothingIsCreated() throws Exception {
        byte[] body = "some bytes".getBytes(StandardCharsets.UTF_8);
        assertEquals(400, put("/api/v1/files/f", "application/octet-stream", body, "00000000").statusCode());
        assertEquals(404, http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/files/f")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode());
        assertEquals(0, store.allocator().usedBytes());
        assertEquals(201, put("/api/v1/files/f", "application/octet-stream", body, crc(body)).statusCode());
        assertArrayEquals(body, get("/api/v1/files/f"));
    }

    @Test
    void npyUpload_checksumCoversTheWholeBody() throws Exception {
        byte[] data = Fixtures.iota32(6);
        byte[] header = Npy.header(TensorMeta.of(DType.I32, 2, 3));
        byte[] npy = new byte[header.length + data.length];
        System.arraycopy(header, 0, npy, 0, header.length);
        System.arraycopy(data, 0, npy, header.length, data.length);
        assertEquals(400, put("/api/v1/tensors/n", "application/x-npy", npy, crc(data)).statusCode());
        assertEquals(201, put("/api/v1/tensors/n", "application/x-npy", npy, crc(npy)).statusCode());
        assertArrayEquals(data, get("/api/v1/tensors/n"));
    }

    @Test
    void malformedChecksum_is400() throws Exception {
        HttpResponse<String> r = put("/api/v1/files/g", "application/octet-stream", new byte[3], "xyz");
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("8 hex digits"), r.body());
    }
}
