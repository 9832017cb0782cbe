package io.tenplex.server.peer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Crc32c;
import io.tenplex.server.NettyLeaks;
import io.tenplex.server.RestServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The peer client against a real daemon's REST server on loopback. */
class PeerClientTest {
    private TensorStore store;
    private RestServer server;
    private InetSocketAddress addr;
    private final PeerClient client = new PeerClient(4, null);
    private byte[] data;

    @BeforeEach
    void start() throws Exception {
        store = new TensorStore(new Allocator(64 << 20), 4096);
        data = new byte[64 * 1000 * 4];
        new Random(5).nextBytes(data);
        Fixtures.putTensor(store, "/job/j/save/3/w", TensorMeta.of(DType.F32, 64, 1000), data, false);
        server = new RestServer(store, null);
        addr = server.start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
        store.close();
    }

    @AfterAll
    static void noLeaks() {
        NettyLeaks.assertNone();
    }

    private byte[] rows(int from, int to, int c0, int c1) {
        ByteBuffer out = ByteBuffer.allocate((to - from) * (c1 - c0) * 4);
        for (int r = from; r < to; r++) {
            out.put(data, (r * 1000 + c0) * 4, (c1 - c0) * 4);
        }
        return out.array();
    }

    @Test
    void pacedRead_isCappedAtTheAskedRate_andTheNextUnpacedReadOnTheConnectionIsNot() throws Exception {
        // 4 MiB: the kernel leaves a connection's first 10 segments unpaced, 640 KiB on loopback
        byte[] big = new byte[4 << 20];
        new Random(7).nextBytes(big);
        Fixtures.putTensor(store, "/job/j/save/3/big", TensorMeta.of(DType.F32, 1024, 1024), big, false);
        PeerClient one = new PeerClient(1, null); // one connection: both reads use it
        try {
            ByteBuffer paced = ByteBuffer.allocate(big.length); // the last 3.4 MiB at 2 MB/s: about 1.8 s
            long t0 = System.nanoTime();
            OptionalInt crc = one.readRegion(addr, "/job/j/save/3/big", null, paced, 2_000_000).get();
            double pacedSeconds = (System.nanoTime() - t0) / 1e9;
            assertArrayEquals(big, paced.array());
            assertEquals(Crc32c.of(ByteBuffer.wrap(big)), crc.getAsInt());
            assertTrue(pacedSeconds > 1.2, "a 4 MiB read paced at 2 MB/s took " + pacedSeconds + " s");
            ByteBuffer free = ByteBuffer.allocate(big.length);
            t0 = System.nanoTime();
            one.readRegion(addr, "/job/j/save/3/big", null, free).get();
            double freeSeconds = (System.nanoTime() - t0) / 1e9;
            assertArrayEquals(big, free.array());
            assertTrue(freeSeconds < pacedSeconds / 2, "unpaced " + freeSeconds + " s vs paced " + pacedSeconds + " s");
        } finally {
            one.close();
        }
    }

    @Test
    void malformedPace_isRefusedWith400() throws Exception {
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + addr.getPort()
                        + "/api/v1/tensors/job/j/save/3/w?range=0:1")).header("x-tenplex-pace", "-3").build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode());
        assertTrue(r.body().contains("x-tenplex-pace"), r.body());
    }

    @Test
    void readsStridedRegions_manyInFlight_withVouchedChecksums() throws Exception {
        List<CompletableFuture<OptionalInt>> reads = new ArrayList<>();
        List<ByteBuffer> bufs = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            ByteBuffer dst = ByteBuffer.allocateDirect(64 * 250 * 4);
            bufs.add(dst);
            reads.add(client.readRegion(addr, "/job/j/save/3/w", ":," + (i % 4) * 250 + ":" + ((i % 4) + 1) * 250, dst));
        }
        for (int i = 0; i < 16; i++) {
            OptionalInt crc = reads.get(i).get();
            byte[] got = new byte[64 * 250 * 4];
            bufs.get(i).flip().get(got);
            byte[] want = rows(0, 64, (i % 4) * 250, (i % 4 + 1) * 250);
            assertArrayEquals(want, got);
            assertEquals(Crc32c.of(ByteBuffer.wrap(want)), crc.getAsInt());
        }
    }

    @Test
    void errors_areIoExceptionsWithTheReason() throws Exception {
        ExecutionException missing = assertThrows(ExecutionException.class,
                () -> client.readRegion(addr, "/job/j/save/3/nope", null, ByteBuffer.allocate(4)).get());
        assertInstanceOf(IOException.class, missing.getCause());
        assertTrue(missing.getCause().getMessage().contains("404"), missing.getCause().getMessage());
        ExecutionException wrongSize = assertThrows(ExecutionException.class,
                () -> client.readRegion(addr, "/job/j/save/3/w", "0:1", ByteBuffer.allocate(8)).get());
        assertTrue(wrongSize.getCause().getMessage().contains("expected 8"), wrongSize.getCause().getMessage());
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        ExecutionException down = assertThrows(ExecutionException.class, () -> client.readRegion(
                new InetSocketAddress("127.0.0.1", closedPort), "/x", null, ByteBuffer.allocate(4)).get());
        assertTrue(down.getCause().getMessage().startsWith("cannot reach peer"), down.getCause().getMessage());
        // the pooled connection still works after errors
        ByteBuffer ok = ByteBuffer.allocate(4000);
        client.readRegion(addr, "/job/j/save/3/w", "5:6", ok).get();
        assertArrayEquals(rows(5, 6, 0, 1000), ok.array());
    }
}
