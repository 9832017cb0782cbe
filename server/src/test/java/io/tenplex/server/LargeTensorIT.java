package io.tenplex.server;

import io.tenplex.store.DataRef;
import io.tenplex.store.RegionRead;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.RangeSyntax;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.Crc32c;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** A tensor past the 2 GiB limit of one buffer: stored in chunks, read across chunk borders, freed. */
class LargeTensorIT {
    private static final long ROWS = 5;
    private static final long COLS = 512L << 20; // 5 x 512 MiB of u8 = 2.5 GiB

    /** The byte at flat offset i: a pattern that differs across rows and within them. */
    private static byte at(long i) {
        return (byte) (i * 31 + (i >>> 20));
    }

    @Test
    void tensorOver2GiB_rangeReadsAcrossChunks_overRest() throws Exception {
        TensorMeta meta = TensorMeta.of(DType.U8, ROWS, COLS);
        try (TensorStore store = new TensorStore(new Allocator(3L << 30))) {
            BlobWriter w = BlobWriter.allocate(store.allocator(), meta.byteSize(), store.checksumBlock());
            ByteBuffer buf = ByteBuffer.allocateDirect(64 << 20);
            CRC32C whole = new CRC32C();
            for (long off = 0; off < meta.byteSize(); off += buf.capacity()) {
                buf.clear();
                for (int i = 0; i < buf.capacity(); i++) {
                    buf.put(i, at(off + i));
                }
                whole.update(buf.duplicate());
                w.append(buf);
            }
            store.putTensor(StorePath.parse("/big"), meta, w.take(), w.checksums(), false);
            assertEquals(meta.byteSize(), store.allocator().usedBytes());

            RestServer server = new RestServer(store, null);
            try {
                int port = server.start("127.0.0.1", 0).getPort();
                HttpClient http = HttpClient.newHttpClient();
                // rows 1..3 and columns around the 1 GiB chunk borders: row 2 starts at byte 1 GiB
                String range = "1:4,536870900:536870912";
                HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                        + "/api/v1/tensors/big?range=" + range)).build(), HttpResponse.BodyHandlers.ofByteArray());
                assertEquals(200, r.statusCode());
                byte[] want = new byte[36];
                for (int row = 1, k = 0; row < 4; row++) {
                    for (long c = 536870900; c < 536870912; c++) {
                        want[k++] = at(row * COLS + c);
                    }
                }
                assertArrayEquals(want, r.body());
                // a contiguous read of rows 1..2, which straddle the 1 GiB chunk border: served as views of
                // two chunks, with the checksum derived from the stored blocks; streamed, not buffered here
                HttpResponse<java.io.InputStream> c = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                        + port + "/api/v1/tensors/big?range=1:3")).build(), HttpResponse.BodyHandlers.ofInputStream());
                CRC32C got = new CRC32C();
                long n = 0;
                try (java.io.InputStream in = c.body()) {
                    byte[] chunk = new byte[1 << 20];
                    int k;
                    while ((k = in.read(chunk)) > 0) {
                        got.update(chunk, 0, k);
                        for (int i = 0; i < k; i += 4093) {
                            assertEquals(at(COLS + n + i), chunk[i]);
                        }
                        n += k;
                    }
                }
                assertEquals(2 * COLS, n);
                assertEquals(Crc32c.hex((int) got.getValue()), c.headers().firstValue("x-tensor-crc32c").orElseThrow());
                long start = (2L << 30) - 1000;
                try (DataRef ref = store.openTensor(StorePath.parse("/big"))) {
                    RegionRead read = new RegionRead(ref, meta, RangeSyntax.parse("", meta.shape()));
                    assertEquals(meta.byteSize(), read.byteSize());
                    assertEquals((int) whole.getValue(), ref.crc32c(0, meta.byteSize()).getAsInt());
                    ByteBuffer across = ByteBuffer.allocate(2000);
                    ref.copyTo(start, 2000, across);
                    for (int i = 0; i < 2000; i++) {
                        assertEquals(at(start + i), across.get(i));
                    }
                }
            } finally {
                server.close();
            }
            store.delete(StorePath.parse("/big"));
            assertEquals(0, store.allocator().usedBytes());
        }
    }
}
