package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Crc32c;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /upload} with a compact batch ({@code application/x-tenplex-batch}) over a real loopback
 * socket: every entry reads back exactly, with its own checksums, from one shared allocation that is
 * freed once the last entry is gone; every malformed or hostile batch is refused with a 4xx before
 * anything is stored, and leaves no memory behind (the store's close checks it).
 */
class BatchUploadTest extends ServedStoreTest {
    private static final long BUDGET = 8 << 20;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(BUDGET, 1 << 20), 1024);
    }

    /** A batch body: entries as {@code (name, dtype or "-", dims or "-", bytes)}. */
    static final class Body {
        private final List<String> lines = new ArrayList<>();
        private final ByteArrayOutputStream data = new ByteArrayOutputStream();

        Body add(String name, String dtype, String dims, byte[] bytes) {
            return line(bytes.length + "\t" + dtype + "\t" + dims + "\t" + name, bytes);
        }

        Body line(String line, byte[] bytes) {
            lines.add(line + "\n");
            data.writeBytes(bytes);
            return this;
        }

        byte[] index() {
            return String.join("", lines).getBytes(StandardCharsets.UTF_8);
        }

        byte[] bytes() {
            return with("tenplex-batch 1 " + lines.size() + " " + index().length + "\n", index(), data.toByteArray());
        }

        static byte[] with(String head, byte[] index, byte[] data) {
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            o.writeBytes(head.getBytes(StandardCharsets.US_ASCII));
            o.writeBytes(index);
            o.writeBytes(data);
            return o.toByteArray();
        }
    }

    private RawHttp.Response post(String prefix, Map<String, String> headers, byte[] body) throws Exception {
        Map<String, String> h = new LinkedHashMap<>(headers);
        h.putIfAbsent("Content-Type", BatchUpload.CONTENT_TYPE);
        try (RawHttp c = new RawHttp(port)) {
            return c.send("POST", "/upload?prefix=" + prefix, h, body);
        }
    }

    private RawHttp.Response get(String target, Map<String, String> headers) throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            return c.send("GET", target, headers, null);
        }
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void everyEntry_readsBackExactly_withItsOwnChecksum_fromOneAllocation() throws Exception {
        byte[] odd = random(4097, 1);
        byte[] f32 = random(3 * 5 * 7 * 4, 2);
        byte[] scalar = random(8, 3);
        byte[] bf16 = random(9 * 11 * 2, 4);
        byte[] text = "héllo".getBytes(StandardCharsets.UTF_8);
        Body b = new Body().add("odd.numpy.ndarray", "u8", "4097", odd).add("m/w.numpy.ndarray", "f32", "3,5,7", f32)
                .add("m/s.numpy.ndarray", "f64", "", scalar).add("m/empty.numpy.ndarray", "f32", "0,3", new byte[0])
                .add("bf.numpy.ndarray", "bf16", "9,11", bf16).add("note.str", "-", "-", text)
                .add("nothing.bytes", "-", "-", new byte[0]).add("ключ.numpy.ndarray", "u8", "1", new byte[] {7});
        long before = store.allocator().usedBytes();
        assertEquals(200, post("/job/b/s", Map.of(), b.bytes()).status());
        long payload = odd.length + f32.length + scalar.length + bf16.length + text.length + 1;
        assertEquals(before + payload, store.allocator().usedBytes(), "one allocation of the entries' bytes");
        checkTensor("/job/b/s/odd.numpy.ndarray", "u8", "4097", odd);
        checkTensor("/job/b/s/m/w.numpy.ndarray", "f32", "3,5,7", f32);
        checkTensor("/job/b/s/m/s.numpy.ndarray", "f64", "", scalar);
        checkTensor("/job/b/s/m/empty.numpy.ndarray", "f32", "0,3", new byte[0]);
        checkTensor("/job/b/s/bf.numpy.ndarray", "bf16", "9,11", bf16);
        checkTensor("/job/b/s/%D0%BA%D0%BB%D1%8E%D1%87.numpy.ndarray", "u8", "1", new byte[] {7});
        assertArrayEquals(text, get("/api/v1/files/job/b/s/note.str", Map.of()).body());
        assertEquals(0, get("/api/v1/files/job/b/s/nothing.bytes", Map.of()).body().length);
        assertEquals("f32\n3\n3\n5\n7\n", get("/query?path=/job/b/s/m/w.numpy.ndarray.meta", Map.of()).text(),
                "a batch's tensor has the sidecar a tar upload's has");
    }

    private void checkTensor(String path, String dtype, String dims, byte[] want) throws Exception {
        RawHttp.Response r = get("/api/v1/tensors" + path, Map.of("x-want-crc32c", "1"));
        assertEquals(200, r.status(), path + ": " + r.text());
        assertEquals(dtype, r.headers().get("x-tensor-dtype"), path);
        assertEquals(dims, r.headers().get("x-tensor-dims"), path);
        assertArrayEquals(want, r.body(), path);
        assertEquals(Crc32c.hex(Crc32c.of(ByteBuffer.wrap(want))), r.headers().get("x-tensor-crc32c"),
                path + ": the stored checksum is the entry's own");
    }

    @Test
    void theSharedAllocation_isFreed_withItsLastEntry() throws Exception {
        Body b = new Body();
        for (int i = 0; i < 50; i++) {
            b.add("t" + i + ".numpy.ndarray", "i32", "1000", random(4000, i));
        }
        long before = store.allocator().usedBytes();
        assertEquals(200, post("/p", Map.of(), b.bytes()).status());
        assertEquals(before + 200_000, store.allocator().usedBytes());
        for (int i = 1; i < 50; i++) {
            assertEquals(200, delete("/api/v1/tensors/p/t" + i + ".numpy.ndarray"));
        }
        assertEquals(before + 200_000, store.allocator().usedBytes(), "one entry keeps the whole allocation");
        checkTensor("/p/t0.numpy.ndarray", "i32", "1000", random(4000, 0));
        assertEquals(200, delete("/api/v1/tensors/p/t0.numpy.ndarray"));
        // the read above holds the blob until its response's write completes on the event loop
        Await.value("the batch's allocation freed: used bytes", before, store.allocator()::usedBytes);
    }

    private int delete(String target) throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            return c.send("DELETE", target, Map.of(), null).status();
        }
    }

    @Test
    void theBodysChecksum_isChecked_beforeAnythingIsStored() throws Exception {
        byte[] body = new Body().add("a.numpy.ndarray", "u8", "3", new byte[] {1, 2, 3}).add("f", "-", "-",
                random(5000, 9)).bytes();
        String good = Crc32c.hex(Crc32c.of(ByteBuffer.wrap(body)));
        RawHttp.Response bad = post("/c", Map.of("x-tensor-crc32c", "00000000"), body);
        assertEquals(400, bad.status());
        assertTrue(bad.text().contains("checksum mismatch"), bad.text());
        assertTrue(store.stat(StorePath.parse("/c")).isEmpty());
        assertEquals(200, post("/c", Map.of("x-tensor-crc32c", good), body).status());
        checkTensor("/c/a.numpy.ndarray", "u8", "3", new byte[] {1, 2, 3});
    }

    @Test
    void anExistingEntry_withoutReplace_refusesTheWholeBatch() throws Exception {
        assertEquals(200, post("/r", Map.of(), new Body().add("b", "-", "-", new byte[] {1}).bytes()).status());
        byte[] two = new Body().add("a", "-", "-", new byte[] {2}).add("b", "-", "-", new byte[] {3}).bytes();
        RawHttp.Response r = post("/r", Map.of(), two);
        assertEquals(409, r.status(), r.text());
        assertTrue(store.stat(StorePath.parse("/r/a")).isEmpty(), "nothing of a refused batch is stored");
        assertEquals(200, post("/r", Map.of("x-replace", "true"), two).status());
        assertArrayEquals(new byte[] {3}, get("/api/v1/files/r/b", Map.of()).body());
    }

    @Test
    void aClientsLargestBatch_isWithinTheIndexsHeapLimit() throws Exception {
        Body b = new Body(); // 2048 leaves (the Python client's most) with names of a deep module tree
        for (int i = 0; i < 2048; i++) {
            b.add("model/encoder/layers/" + i + "/self_attention/query_key_value/weight.numpy.ndarray", "f32", "2,2,1",
                    random(16, i));
        }
        assertEquals(200, post("/big", Map.of(), b.bytes()).status());
        checkTensor("/big/model/encoder/layers/2047/self_attention/query_key_value/weight.numpy.ndarray", "f32", "2,2,1",
                random(16, 2047));
    }

    @Test
    void entriesAcrossSmallChunks_readBackExactly_withTheirChecksums() throws Exception {
        server.close();
        store.close();
        store = new TensorStore(new Allocator(BUDGET, 1000), 256); // chunks of 1000 bytes, checksum blocks of 256
        server = new RestServer(store, null);
        port = server.start("127.0.0.1", 0).getPort();
        Random r = new Random(11);
        Body b = new Body();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            int n = switch (i % 5) {
                case 0 -> 0;
                case 1 -> 256;
                case 2 -> 1000;
                default -> r.nextInt(3000);
            };
            data.add(random(n, 100 + i));
            b.add("e" + i + ".numpy.ndarray", "u8", Integer.toString(n), data.get(i));
        }
        byte[] body = b.bytes();
        String crc = Crc32c.hex(Crc32c.of(ByteBuffer.wrap(body)));
        assertEquals(200, post("/s", Map.of("x-tensor-crc32c", crc), body).status());
        for (int i = 0; i < 300; i++) {
            checkTensor("/s/e" + i + ".numpy.ndarray", "u8", Integer.toString(data.get(i).length), data.get(i));
        }
    }

    @Test
    void anEmptyBatch_storesNothing() throws Exception {
        assertEquals(200, post("/e", Map.of(), "tenplex-batch 1 0 0\n".getBytes(StandardCharsets.US_ASCII)).status());
        assertTrue(store.stat(StorePath.parse("/e")).isEmpty());
    }
}
