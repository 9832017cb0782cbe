package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A source whose reads of some old ranks wait until those ranks are ready (a lost worker's rank
 * rebuilt from parity and published); reads of the other ranks go through at once. A rank whose
 * readiness fails, or does not come within the timeout, fails its reads with an {@link IOException}
 * naming it, so the run fails and nothing is committed. Give the same ranks to the {@link Executor}
 * as late ranks, so its flows read every other piece first.
 */
public final class AwaitedRanks implements ShardSource {
    private final ShardSource source;
    private final Map<Integer, CompletableFuture<?>> ready;
    private final Duration timeout;

    /** @param ready per rank that is not ready yet, completed when it is (exceptionally when it never will be) */
    public AwaitedRanks(ShardSource source, Map<Integer, CompletableFuture<?>> ready, Duration timeout) {
        this.source = source;
        this.ready = Map.copyOf(ready);
        this.timeout = timeout;
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException {
        await(rank);
        return source.read(rank, device, key, region, dst);
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
            throws IOException {
        await(rank);
        return source.read(rank, device, key, region, dst, pace);
    }

    private void await(int rank) throws IOException {
        CompletableFuture<?> f = ready.get(rank);
        if (f == null) {
            return;
        }
        try {
            f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            throw new IOException("rank " + rank + " did not become readable: "
                    + (c.getMessage() == null ? c.toString() : c.getMessage()), c);
        } catch (TimeoutException e) {
            throw new IOException("rank " + rank + " did not become readable within " + timeout.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for rank " + rank, e);
        }
    }
}
