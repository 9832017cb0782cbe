package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.Fixtures;
import io.tenplex.store.Npy;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlockChecksums;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;

/**
 * Upload bodies of known length are read by the socket straight into their blob: the bytes counted
 * as landed in {@code tenplex_http_landed_bytes_total}, stored exactly, with block checksums of the
 * stored bytes, across chunk boundaries, for every upload route, and without taking the bytes of a
 * request that follows on the same connection. The store's chunks are small and odd-sized
 * (700,001 bytes) and its checksum blocks 64 KiB, so landings end at chunk ends mid-block.
 */
class UploadLandingTest extends ServedStoreTest {
    private static final int CHUNK = 700_001;
    private static final int BLOCK = 64 << 10;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(256L << 20, CHUNK), BLOCK);
    }

    @Test
    void largeTensorUpload_landsInItsBlob_andStoresExactBytesAndChecksums() throws Exception {
        int size = 5_000_003; // several chunks, not a multiple of a block or a page
        byte[] data = random(size, 1);
        long before = landed();
        RawHttp.Response r = send("PUT", "/api/v1/tensors/t?dtype=u8&dims=" + size, Map.of(), data);
        assertEquals(201, r.status(), r.text());
        assertArrayEquals(data, Fixtures.readAll(store, "/t"));
        assertChecksumsOf(data, "/t");
        // all but the first read (which also holds the request head) lands in place
        assertTrue(landed() - before >= size - (1 << 20), "landed " + (landed() - before) + " of " + size);
    }

    @Test
    void replacingUpload_landsInRecycledMemory_andReadsBackItsOwnBytes() throws Exception {
        int size = 3_000_017;
        for (int round = 0; round < 3; round++) {
            byte[] data = random(size, 10 + round);
            RawHttp.Response r = send("PUT", "/api/v1/tensors/w?dtype=u8&dims=" + size + "&replace=true", Map.of(),
                    data);
            assertEquals(round == 0 ? 201 : 200, r.status(), r.text());
            assertArrayEquals(data, Fixtures.readAll(store, "/w"), "round " + round);
            assertChecksumsOf(data, "/w");
        }
    }

    @Test
    void requestPipelinedBehindALandedBody_isServedIntact() throws Exception {
        int size = 2_500_000;
        byte[] data = random(size, 2);
        String put = "PUT /api/v1/tensors/p?dtype=u8&dims=" + size + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + size
                + "\r\n\r\n";
        String get = "GET /api/v1/tensors/p HTTP/1.1\r\nHost: x\r\n\r\n";
        try (RawHttp c = new RawHttp(port)) {
            c.write(concat(ascii(put), data, ascii(get))); // the next request right behind the body
            assertEquals(201, c.read().status());
            RawHttp.Response r = c.read();
            assertEquals(200, r.status(), r.text());
            assertArrayEquals(data, r.body());
        }
        assertArrayEquals(data, Fixtures.readAll(store, "/p"));
    }

    @Test
    void npyUpload_landsTheDataAfterItsHeader() throws Exception {
        TensorMeta meta = TensorMeta.of(DType.F32, 1001, 999);
        byte[] data = random((int) meta.byteSize(), 3);
        long before = landed();
        RawHttp.Response r = send("PUT", "/api/v1/tensors/n", Map.of("Content-Type", "application/x-npy"),
                concat(Npy.header(meta), data));
        assertEquals(201, r.status(), r.text());
        assertArrayEquals(data, Fixtures.readAll(store, "/n"));
        assertChecksumsOf(data, "/n");
        assertTrue(landed() - before >= data.length - (1 << 20), "landed " + (landed() - before));
    }

    @Test
    void fileAndCompatUploads_land() throws Exception {
        byte[] file = random(2_000_001, 4);
        byte[] tensor = random(1_500_000 * 4, 5);
        long before = landed();
        assertEquals(201, send("PUT", "/api/v1/files/f.bin", Map.of(), file).status());
        assertEquals(200, send("POST", "/upload?path=/c&dtype=f32&dims=1500000", Map.of("Content-Type", "x-tensor"),
                tensor).status());
        assertArrayEquals(file, Fixtures.readAll(store, "/f.bin"));
        assertArrayEquals(tensor, Fixtures.readAll(store, "/c"));
        assertChecksumsOf(file, "/f.bin");
        assertChecksumsOf(tensor, "/c");
        assertTrue(landed() - before >= file.length + tensor.length - (2 << 20), "landed " + (landed() - before));
    }

    @Test
    void tarUpload_withLongNamesAndOddSizes_landsAndUnpacksExactly() throws Exception {
        String longName = "deep/" + "n".repeat(150) + ".bin"; // a PAX header entry
        byte[] big = random(2_345_679, 6);
        byte[] odd = random(1_001, 7);
        byte[] tar = tar(Map.of("w", big, "w.meta", TensorMeta.of(DType.U8, big.length).sidecarBytes(), longName, odd));
        CRC32C crc = new CRC32C();
        crc.update(tar);
        long before = landed();
        RawHttp.Response r = send("POST", "/upload?prefix=/batch", Map.of("Content-Type", "application/x-tar",
                "x-tensor-crc32c", String.format("%08x", crc.getValue())), tar);
        assertEquals(200, r.status(), r.text());
        assertArrayEquals(big, Fixtures.readAll(store, "/batch/w"));
        assertEquals(TensorMeta.of(DType.U8, big.length), store.stat(StorePath.parse("/batch/w")).orElseThrow().meta());
        assertArrayEquals(odd, Fixtures.readAll(store, "/batch/" + longName));
        assertChecksumsOf(big, "/batch/w");
        assertChecksumsOf(odd, "/batch/" + longName);
        assertTrue(landed() - before >= tar.length - (1 << 20), "landed " + (landed() - before));
    }

    @Test
    void chunkedUpload_isCopied_andStoredExactly() throws Exception {
        byte[] data = random(1_234_567, 8);
        long before = landed();
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            out.write(ascii("PUT /api/v1/files/ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
            for (int off = 0; off < data.length; off += 100_000) {
                int n = Math.min(100_000, data.length - off);
                out.write(ascii(Integer.toHexString(n) + "\r\n"));
                out.write(data, off, n);
                out.write(ascii("\r\n"));
            }
            out.write(ascii("0\r\n\r\n"));
            out.flush();
            assertTrue(statusLine(s.getInputStream()).contains(" 201 "));
        }
        assertArrayEquals(data, Fixtures.readAll(store, "/ch"));
        assertEquals(before, landed(), "a body of unknown length goes through the usual receive buffers");
    }

    @Test
    void malformedContentLength_isAnsweredAndClosed_notDropped() throws Exception {
        for (String length : new String[] {"abc", "99999999999999999999", "-5", "1, 2"}) {
            try (RawHttp c = new RawHttp(port)) {
                c.write(ascii("PUT /api/v1/files/m HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + "\r\n\r\nabc"));
                RawHttp.Response r = c.readOrNull(false);
                assertTrue(r != null && r.status() == 400, "Content-Length: " + length + " got "
                        + (r == null ? "no answer" : r.status() + " " + r.text()));
            }
        }
        assertTrue(store.stat(StorePath.parse("/m")).isEmpty());
    }

    private RawHttp.Response send(String method, String target, Map<String, String> headers, byte[] body)
            throws IOException {
        try (RawHttp c = new RawHttp(port)) {
            return c.send(method, target, headers, body);
        }
    }

    /** The store's block checksums are those of the uploaded bytes, block by block. */
    private void assertChecksumsOf(byte[] data, String path) {
        try (DataRef ref = store.open(StorePath.parse(path))) {
            BlockChecksums sums = ref.checksums();
            assertEquals((data.length + BLOCK - 1) / BLOCK, sums.blockCount());
            for (int b = 0; b < sums.blockCount(); b++) {
                CRC32C c = new CRC32C();
                c.update(data, b * BLOCK, Math.min(BLOCK, data.length - b * BLOCK));
                assertEquals((int) c.getValue(), sums.block(b), path + " block " + b);
            }
        }
    }

    private long landed() throws IOException {
        String text = send("GET", "/metrics", Map.of(), null).text();
        Matcher m = Pattern.compile("(?m)^tenplex_http_landed_bytes_total ([0-9.E+]+)$").matcher(text);
        assertTrue(m.find(), "no tenplex_http_landed_bytes_total in /metrics");
        return (long) Double.parseDouble(m.group(1));
    }

    private static String statusLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0 && b != '\n') {
            line.write(b);
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    private static byte[] tar(Map<String, byte[]> entries) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            out.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
            for (Map.Entry<String, byte[]> e : new java.util.TreeMap<>(entries).entrySet()) {
                TarArchiveEntry te = new TarArchiveEntry(e.getKey());
                te.setSize(e.getValue().length);
                out.putArchiveEntry(te);
                out.write(e.getValue());
                out.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] concat(byte[]... parts) {
        ByteBuffer b = ByteBuffer.allocate(java.util.Arrays.stream(parts).mapToInt(p -> p.length).sum());
        for (byte[] p : parts) {
            b.put(p);
        }
        return b.array();
    }
}
