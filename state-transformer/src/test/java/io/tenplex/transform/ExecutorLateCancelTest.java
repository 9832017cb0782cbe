package io.tenplex.transform;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A run cancelled while a lane waits for a late rank (a part aborted while a lost rank is still being
 * rebuilt). The lane stops without taking the late pieces, so their shards stay open in the sink: the
 * run must fail, for its caller frees the open shards only on a failure (a run answering as complete
 * left a daemon's staging buffers allocated for good).
 */
class ExecutorLateCancelTest {
    private final ExecutorService pool = Executors.newFixedThreadPool(2);
    private final ExecutorService caller = Executors.newSingleThreadExecutor();

    @AfterEach
    void stop() {
        pool.shutdownNow();
        caller.shutdownNow();
    }

    @Test
    void cancelledWhileWaitingForALateRank_failsNamingWhy_withItsShardsUnfinished() throws Exception {
        Ptc from = ExecutorTest.ptc(2, 2, 1, 4); // every old rank on one worker: one flow, one lane
        Ptc to = ExecutorTest.ptc(4, 1, 1, 4);
        var old = ReferenceInterpreter.shard(from, ReferenceInterpreter.fullTensors(from, 9));
        int late = 3;
        CompletableFuture<Void> rebuilt = new CompletableFuture<>();
        ShardSource awaited = new AwaitedRanks(new ExecutorTest.FakeSource(old), Map.of(late, rebuilt),
                Duration.ofHours(1));
        CountDownLatch waiting = new CountDownLatch(1);
        ShardSource source = new ShardSource() {
            @Override
            public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst)
                    throws IOException {
                return awaited.read(rank, device, key, region, dst);
            }

            @Override
            public CompletableFuture<?> readable(int rank, String key) {
                if (rank == late) {
                    waiting.countDown(); // the lane looks for a readable late piece: every other one is read
                }
                return awaited.readable(rank, key);
            }
        };
        ExecutorTest.FakeSink sink = new ExecutorTest.FakeSink(old);
        Executor ex = new Executor(source, pool, 1, Map.of(), Set.of(late));
        var run = caller.submit(() -> ex.run(Planner.plan(from, to), s -> true, sink));
        assertTrue(waiting.await(30, TimeUnit.SECONDS), "the lane never waited for rank " + late);
        ex.cancel("plan p7 was aborted");
        rebuilt.complete(null); // wakes the lane: it sees the cancel and takes no late piece
        ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof ExecutionFailedException, String.valueOf(e.getCause()));
        assertTrue(e.getCause().getMessage().contains("plan p7 was aborted"), e.getCause().getMessage());
        assertTrue(!sink.open.isEmpty(), "the shards reading rank " + late + " were never completed");
    }
}
