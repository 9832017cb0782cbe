package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Compact batches as a hostile or broken client sends them: each is refused with its status and a
 * reason naming what is wrong, nothing is stored, the memory in use is what it was (the store's close
 * checks that nothing leaked), and the daemon goes on serving.
 */
class HostileBatchTest extends ServedStoreTest {
    private static final long BUDGET = 4 << 20;

    @Override
    TensorStore newStore() {
        return new TensorStore(new Allocator(BUDGET, 1 << 20), 1024);
    }

    /** The root holds nothing (the walk lists the root itself only). */
    private boolean nothingStored() {
        return store.walk(StorePath.root(), true).stream().allMatch(e -> e.path().isRoot());
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A batch of one index line (as given) and data. */
    private static byte[] one(String line, byte[] data) {
        byte[] index = ascii(line + "\n");
        return BatchUploadTest.Body.with("tenplex-batch 1 1 " + index.length + "\n", index, data);
    }

    /** A batch of the index lines given (each ending in a newline) and data. */
    private static byte[] lines(String index, byte[] data) {
        byte[] b = ascii(index);
        return BatchUploadTest.Body.with("tenplex-batch 1 " + index.chars().filter(c -> c == '\n').count() + " " + b.length
                + "\n", b, data);
    }

    static Stream<Arguments> refused() {
        byte[] four = {1, 2, 3, 4};
        return Stream.of(
                Arguments.of("not a batch", ascii("PK\3\4 a zip file\n"), 400, "not a batch"),
                Arguments.of("no newline in the head", ascii("tenplex-batch 1 1 " + "9".repeat(200)), 400, "no newline"),
                Arguments.of("another version", ascii("tenplex-batch 2 0 0\n"), 400, "version '2'"),
                Arguments.of("a negative count", ascii("tenplex-batch 1 -1 0\n"), 400, "not a count"),
                Arguments.of("a count over the limit", ascii("tenplex-batch 1 70000 9000000\n"), 400, "at most 65536"),
                Arguments.of("an index over the limit", ascii("tenplex-batch 1 1 999999999999\n"), 413, "index is at most"),
                Arguments.of("an index too short for its count", ascii("tenplex-batch 1 5 10\n"), 400, "cannot hold 5"),
                Arguments.of("a body shorter than its index", ascii("tenplex-batch 1 1 100\nxx"), 400, "shorter than its head"),
                Arguments.of("an entry without its fields", one("4 u8 4 a", four), 400, "is not '<bytes>"),
                Arguments.of("a size that is not a count", one("0x4\tu8\t4\ta", four), 400, "not a count"),
                Arguments.of("a size of 2^63", one("9223372036854775808\tu8\t4\ta", four), 400, "not a count"),
                Arguments.of("an unknown dtype", one("4\tq99\t4\ta", four), 400, "unknown dtype"),
                Arguments.of("dims that do not match the size", one("4\tf32\t2\ta", four), 400, "needs 8 bytes"),
                Arguments.of("dims whose product overflows", one("4\tf64\t4294967296,4294967296\ta", four), 400, "2^63"),
                Arguments.of("a file with dims", one("4\t-\t4\ta", four), 400, "'-' as dims"),
                Arguments.of("a name with ..", one("4\t-\t-\t../x", four), 400, "relative components"),
                Arguments.of("a name that is not UTF-8", BatchUploadTest.Body.with("tenplex-batch 1 1 10\n",
                        new byte[] {'4', '\t', '-', '\t', '-', '\t', (byte) 0xff, (byte) 0xfe, 'a', '\n'}, four), 400, "not valid UTF-8"),
                Arguments.of("a name twice", lines("2\t-\t-\ta\n2\t-\t-\ta\n", four), 400, "twice"),
                Arguments.of("bytes after the entries in the index", BatchUploadTest.Body.with("tenplex-batch 1 1 12\n",
                        ascii("4\t-\t-\ta\nzz\n"), four), 400, "bytes after its 1 entries"),
                Arguments.of("data shorter than the index says", one("8\t-\t-\ta", four), 400, "8 bytes but 4"),
                Arguments.of("data longer than the index says", one("2\t-\t-\ta", four), 400, "2 bytes but 4"),
                Arguments.of("data over a batch's limit", one((65L << 20) + "\t-\t-\ta", four), 413, "at most 67108864"),
                Arguments.of("data over the memory budget", one((5L << 20) + "\tu8\t" + (5L << 20) + "\ta", new byte[5 << 20]),
                        413, ""),
                Arguments.of("a daemon-owned path", one("4\t-\t-\tjob/x/generations/g1/a", four), 409, "sealed generations"),
                Arguments.of("a name that is data and a directory", lines("2\t-\t-\ta\n2\t-\t-\ta/b\n", four), 409,
                        "both data and a directory"),
                // parsed, every dimension and path component is an object: 16 MiB of them exhausted a 512 MiB heap
                Arguments.of("dims longer than a sidecar may hold", one("0\tu8\t0" + ",1".repeat(5000) + "\ta", new byte[0]),
                        400, "dims are longer than 4096"),
                // a walk of such a tree (a delete, a listing) overflowed the thread's stack
                Arguments.of("a name deeper than a path of 4096 bytes holds", one("4\t-\t-\t" + "a/".repeat(2048) + "b",
                        four), 400, "more than 2048 components"),
                Arguments.of("an index of many short path components", manyComponents(16384, 60), 413,
                        "of heap once parsed"),
                // a tensor's sidecar name is the tensor's: a file or directory there would hide it or be hidden
                Arguments.of("a tensor and a file named as its sidecar", lines("4\tf32\t1\tx\n3\t-\t-\tx.meta\n",
                        new byte[] {0, 0, -128, 63, 'a', 'b', 'c'}), 409, "sidecar"),
                Arguments.of("a tensor and a directory named as its sidecar", lines(
                        "3\t-\t-\td/y.meta/z\n4\tf32\t1\td/y\n", new byte[] {'a', 'b', 'c', 0, 0, -128, 63}), 409,
                        "sidecar"));
    }

    /** A batch of {@code entries} empty files, each named with {@code parts} one-letter components. */
    private static byte[] manyComponents(int entries, int parts) {
        StringBuilder index = new StringBuilder();
        for (int i = 0; i < entries; i++) {
            index.append("0\t-\t-\t").append(i).append("/a".repeat(parts - 1)).append('\n');
        }
        return lines(index.toString(), new byte[0]);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void isRefused_andNothingIsStored(String what, byte[] body, int status, String reason) throws Exception {
        long used = store.allocator().usedBytes();
        RawHttp.Response r;
        try (RawHttp c = new RawHttp(port)) {
            r = c.send("POST", "/upload?prefix=/", Map.of("Content-Type", BatchUpload.CONTENT_TYPE), body);
        }
        assertEquals(status, r.status(), what + ": " + r.text());
        assertTrue(r.text().contains(reason), what + ": " + r.text());
        assertTrue(nothingStored(), what + ": nothing is stored");
        assertEquals(used, store.allocator().usedBytes(), what + ": no memory is held");
        assertEquals(200, new RawHttp(port).send("GET", "/api/v1/health", Map.of(), null).status());
    }

    @Test
    void theDeepestPathAllowed_isStored_listed_andDeleted() throws Exception {
        String name = "d/" + "a/".repeat(2046) + "b"; // 2048 components
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.send("POST", "/upload?prefix=/", Map.of("Content-Type", BatchUpload.CONTENT_TYPE),
                    one("4\t-\t-\t" + name, new byte[] {1, 2, 3, 4}));
            assertEquals(200, r.status(), r.text());
            assertEquals(200, c.send("GET", "/api/v1/files/" + name, Map.of(), null).status());
            assertEquals(200, c.send("GET", "/api/v1/dirs/d?recursive=true", Map.of(), null).status());
            assertEquals(200, c.send("DELETE", "/api/v1/dirs/d?recursive=true", Map.of(), null).status());
            assertEquals(200, c.send("GET", "/api/v1/health", Map.of(), null).status());
        }
        assertTrue(nothingStored());
    }

    /** Empty entries in directories of their own hold heap and no memory budget: the store counts them. */
    @Test
    void entriesBeyondWhatTheHeapHoldsForTheTree_areRefused_andNothingIsStored() throws Exception {
        store.limitNodes(1000);
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.send("POST", "/upload?prefix=/", Map.of("Content-Type", BatchUpload.CONTENT_TYPE),
                    manyComponents(400, 3)); // 400 x 3 nodes
            assertEquals(507, r.status(), r.text());
            assertTrue(r.text().contains("needs 1200 more directories and entries, and the store holds 0 of the 1000"),
                    r.text());
            assertTrue(nothingStored());
            r = c.send("POST", "/upload?prefix=/", Map.of("Content-Type", BatchUpload.CONTENT_TYPE),
                    manyComponents(300, 3));
            assertEquals(200, r.status(), r.text());
            assertTrue(c.send("GET", "/metrics", Map.of(), null).text().contains("tenplex_store_nodes 900.0"));
        }
    }

    @Test
    void aBodyWithoutALength_isRefused() throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            RawHttp.Response r = c.raw("POST /upload?prefix=/ HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    + BatchUpload.CONTENT_TYPE + "\r\nTransfer-Encoding: chunked\r\n\r\n14\r\ntenplex-batch 1 0 0\n\r\n0\r\n\r\n");
            assertEquals(411, r.status(), r.text());
            assertTrue(r.text().contains("Content-Length"), r.text());
        }
        assertTrue(nothingStored());
    }

    /** 100 files of one byte: an index whose parse is reserved as about 40 KiB of heap. */
    private static byte[] hundred(String dtype, String firstName) {
        StringBuilder index = new StringBuilder(dtype.equals("-") ? "1\t-\t-\t" + firstName + "\n"
                : "1\t" + dtype + "\t1\t" + firstName + "\n");
        for (int i = 1; i < 100; i++) {
            index.append("1\t-\t-\tf").append(i).append('\n');
        }
        return lines(index.toString(), new byte[100]);
    }

    private static void writeRequest(RawHttp c, byte[] body, int cut) throws java.io.IOException {
        c.write(ascii("POST /upload?prefix=/h HTTP/1.1\r\nHost: x\r\nContent-Type: " + BatchUpload.CONTENT_TYPE
                + "\r\nContent-Length: " + body.length + "\r\n\r\n"));
        c.write(java.util.Arrays.copyOf(body, body.length - cut));
    }

    @Test
    void theHeapReservation_isGivenBack_onEveryPath_andAConnectionServesOn() throws Exception {
        server.close();
        // room for one batch's index at a time: a reservation not given back refuses the last batch (429)
        ServerLimits tight = new ServerLimits(java.time.Duration.ofSeconds(30), java.time.Duration.ofSeconds(30),
                java.time.Duration.ofSeconds(30), java.time.Duration.ofSeconds(30), 64 << 10, 64 << 10, java.util.List.of());
        server = new RestServer(store, null, tight);
        port = server.start("127.0.0.1", 0).getPort();
        Map<String, String> batch = Map.of("Content-Type", BatchUpload.CONTENT_TYPE);
        byte[] good = hundred("-", "f0");
        try (RawHttp c = new RawHttp(port)) {
            assertEquals(400, c.send("POST", "/upload?prefix=/h", batch, hundred("q9", "f0")).status(), "bad dtype");
            byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
            assertEquals(400, c.send("POST", "/upload?prefix=/h", batch, longer).status(), "trailing byte");
            Map<String, String> badCrc = Map.of("Content-Type", BatchUpload.CONTENT_TYPE, "x-tensor-crc32c", "00000000");
            assertEquals(400, c.send("POST", "/upload?prefix=/h", badCrc, good).status(), "checksum (end fails)");
            assertEquals(200, c.send("POST", "/upload?prefix=/h", batch, good).status());
            assertEquals(409, c.send("POST", "/upload?prefix=/h", batch, good).status(), "exists (the store refuses)");
            // pipelined: a refused batch, then a request on the same connection, answered in order
            writeRequest(c, hundred("q9", "f0"), 0);
            c.write(ascii("HEAD /api/v1/files/h/f7 HTTP/1.1\r\nHost: x\r\n\r\n"));
            assertEquals(400, c.read().status());
            RawHttp.Response head = c.readOrNull(true);
            assertEquals(200, head.status());
            assertEquals("1", head.headers().get("content-length"), "an entry of a batch answers HEAD");
        }
        for (int cut : new int[] {50, good.length - 30}) { // closed inside the data, inside the index
            try (RawHttp c = new RawHttp(port)) {
                writeRequest(c, good, cut);
            }
        }
        Await.value("the cut batches' memory released: used bytes", 100, store.allocator()::usedBytes);
        long end = System.nanoTime() + 10_000_000_000L;
        RawHttp.Response r;
        do { // a closed connection's abort runs on its event loop: retried for a while, a leak answers 429 for good
            Thread.sleep(20);
            try (RawHttp c = new RawHttp(port)) {
                r = c.send("POST", "/upload?prefix=/h2", batch, good);
            }
        } while (r.status() == 429 && System.nanoTime() < end);
        assertEquals(200, r.status(), "every earlier batch gave its heap reservation back: " + r.text());
    }

    @Test
    void aBodyCutShort_leavesNothing() throws Exception {
        byte[] body = one("4000\tu8\t4000\ta", new byte[4000]);
        try (RawHttp c = new RawHttp(port)) {
            c.write(ascii("POST /upload?prefix=/ HTTP/1.1\r\nHost: x\r\nContent-Type: " + BatchUpload.CONTENT_TYPE
                    + "\r\nContent-Length: " + body.length + "\r\n\r\n"));
            c.write(java.util.Arrays.copyOf(body, body.length - 1000));
        } // closed with 1000 bytes still to come
        try (RawHttp c = new RawHttp(port)) {
            assertEquals(200, c.send("GET", "/api/v1/health", Map.of(), null).status()); // the daemon serves on
        }
        Await.value("the cut batch's memory released: used bytes", 0, store.allocator()::usedBytes);
        assertTrue(nothingStored());
    }
}
