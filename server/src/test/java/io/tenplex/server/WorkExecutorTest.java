package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.tenplex.store.Fixtures;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Routes that can block (walks, recursive deletes, checksum lists) run on the executor the caller hands in. */
class WorkExecutorTest {
    private final ExecutorService pool = Executors.newFixedThreadPool(2);
    private final AtomicInteger tasks = new AtomicInteger();
    private final ExecutorService counting = new java.util.concurrent.AbstractExecutorService() {
        @Override
        public void execute(Runnable r) {
            tasks.incrementAndGet();
            pool.execute(r);
        }

        @Override
        public void shutdown() {
            pool.shutdown();
        }

        @Override
        public java.util.List<Runnable> shutdownNow() {
            return pool.shutdownNow();
        }

        @Override
        public boolean isShutdown() {
            return pool.isShutdown();
        }

        @Override
        public boolean isTerminated() {
            return pool.isTerminated();
        }

        @Override
        public boolean awaitTermination(long t, java.util.concurrent.TimeUnit u) throws InterruptedException {
            return pool.awaitTermination(t, u);
        }
    };
    private final TensorStore store = new TensorStore(new Allocator(1 << 20, 4096), 1024);
    private final RestServer server = new RestServer(store, null, ServerLimits.DEFAULTS, null, counting);

    @AfterEach
    void stop() {
        server.close();
        assertFalse(pool.isShutdown(), "the caller's executor is the caller's to shut down");
        pool.shutdown();
        store.close();
    }

    @AfterAll
    static void noNettyLeaks() {
        NettyLeaks.assertNone();
    }

    @Test
    void blockingRoutes_runOnTheGivenExecutor() throws Exception {
        server.start("127.0.0.1", 0);
        Fixtures.putF32(store, "/a/t", 4);
        Fixtures.putFile(store, "/a/f", new byte[] {1}, false);
        Fixtures.putFile(store, "/b/f", new byte[] {1}, false);
        try (RawHttp c = new RawHttp(server.port())) {
            assertEquals(200, c.send("GET", "/api/v1/dirs/a?recursive=true", Map.of(), null).status());
            assertEquals(200, c.send("GET", "/api/v1/checksums/a/t", Map.of(), null).status());
            assertEquals(200, c.send("GET", "/query?path=/a", Map.of("Content-Type", "x-dir"), null).status());
            assertEquals(200, c.send("GET", "/query?path=/a/f", Map.of(), null).status());
            assertEquals(200, c.send("DELETE", "/api/v1/files/a/f", Map.of(), null).status());
            assertEquals(200, c.send("DELETE", "/api/v1/dirs/a?recursive=true", Map.of(), null).status());
            assertEquals("1 1\n", c.send("DELETE", "/delete?path=/b", Map.of(), null).text());
        }
        assertEquals(7, tasks.get());
        try (RawHttp c = new RawHttp(server.port())) {
            Fixtures.putF32(store, "/m/t", 4, 4);
            assertEquals(200, c.send("GET", "/api/v1/tensors/m/t?range=0:4,1:2", Map.of(), null).status());
            assertEquals(7, tasks.get(), "a plain read stays on the event loop");
            RawHttp.Response r = c.send("GET", "/api/v1/tensors/m/t?range=0:4,1:2", Map.of("x-want-crc32c", "1"), null);
            assertEquals(200, r.status());
            assertEquals(8, r.headers().get("x-tensor-crc32c").length());
            assertEquals(8, tasks.get(), "a CRC over a region's memory is computed on the work executor");
        }
    }
}
