package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A run whose read pool shuts down (the daemon stopping): it fails, once the lanes that started have
 * ended (they write into the sink's buffers, which the caller frees on a failure), and it does not
 * wait for lanes the pool rejected or dropped unrun.
 */
class ExecutorShutdownTest {
    private final ExecutorService caller = Executors.newSingleThreadExecutor();
    private final Ptc from = ExecutorTest.ptc(2, 2, 1, 4); // every old rank on one worker: one flow
    private final Ptc to = ExecutorTest.ptc(4, 1, 1, 4);

    @AfterEach
    void stop() {
        caller.shutdownNow();
    }

    @Test
    void aPoolThatRejectsTheLanes_failsTheRun() throws Exception {
        var shards = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 3));
        ExecutorService pool = Executors.newFixedThreadPool(1);
        pool.shutdown();
        Executor ex = new Executor(new ExecutorTest.FakeSource(shards), pool, 2);
        ExecutionFailedException e = assertThrows(ExecutionFailedException.class,
                () -> ex.run(Planner.plan(from, to), s -> true, new ExecutorTest.FakeSink(shards)));
        assertTrue(e.getMessage().contains("Rejected"), e.getMessage());
    }

    @Test
    void aPoolShutDownNow_withALaneQueued_failsTheRun_ratherThanWaitingForIt() throws Exception {
        var shards = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 4));
        ShardSource real = new ExecutorTest.FakeSource(shards);
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        ShardSource blocking = new ShardSource() {
            @Override
            public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst)
                    throws IOException {
                reading.countDown();
                try {
                    never.await(); // a read that ends only when interrupted
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("read interrupted", e);
                }
                return real.read(rank, device, key, region, dst);
            }
        };
        ExecutorService pool = Executors.newFixedThreadPool(1); // two lanes of the one flow: the second queued
        Executor ex = new Executor(blocking, pool, 2);
        var run = caller.submit(() -> ex.run(Planner.plan(from, to), s -> true, new ExecutorTest.FakeSink(shards)));
        assertTrue(reading.await(30, TimeUnit.SECONDS), "the first lane never read");
        assertTrue(pool.shutdownNow().size() >= 1, "the second lane was queued, and is dropped");
        ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof ExecutionFailedException, String.valueOf(e.getCause()));
    }
}
