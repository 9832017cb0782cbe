package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A source whose reads of some old ranks wait until what they read is ready (a lost worker's rank
 * rebuilt from parity: each tensor once it is solved and checked, or the whole rank once published);
 * reads of the other ranks go through at once. A tensor ready early is read from the {@code early}
 * source (where the rebuild put it), the others from the regular one once their rank is published.
 * A tensor whose readiness fails, or does not come within the timeout, fails its reads with an
 * {@link IOException} naming its rank, so the run fails and nothing is committed. Give the same ranks
 * to the {@link Executor} as late ranks, so its flows read every other piece first.
 */
public final class AwaitedRanks implements ShardSource {
    /** When each tensor of a rank that is not ready yet can be read, and from where. */
    public interface Readiness {
        /**
         * Completes once {@code key} of {@code rank} can be read: with true when from the early source,
         * false when from the regular one; exceptionally when it never will be.
         */
        CompletableFuture<Boolean> ready(int rank, String key);
    }

    private final ShardSource source;
    private final ShardSource early;
    private final Set<Integer> ranks;
    private final Readiness readiness;
    private final Duration timeout;

    /** @param ready per rank that is not ready yet, completed when all of it is (exceptionally when it never will be) */
    public AwaitedRanks(ShardSource source, Map<Integer, CompletableFuture<?>> ready, Duration timeout) {
        this(source, source, ready.keySet(), byRank(Map.copyOf(ready)), timeout);
    }

    /**
     * @param early where tensors ready before their rank are read
     * @param ranks the ranks not ready yet; {@code readiness} is asked about their tensors only
     */
    public AwaitedRanks(ShardSource source, ShardSource early, Set<Integer> ranks, Readiness readiness,
            Duration timeout) {
        this.source = source;
        this.early = early;
        this.ranks = Set.copyOf(ranks);
        this.readiness = readiness;
        this.timeout = timeout;
    }

    private static Readiness byRank(Map<Integer, CompletableFuture<?>> ready) {
        return (rank, key) -> ready.get(rank).thenApply(v -> false);
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException {
        return read(rank, device, key, region, dst, 0);
    }

    @Override
    public OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
            throws IOException {
        if (!ranks.contains(rank)) {
            return source.read(rank, device, key, region, dst, pace);
        }
        return (await(rank, key) ? early : source).read(rank, device, key, region, dst, pace);
    }

    @Override
    public CompletableFuture<?> readable(int rank, String key) {
        return ranks.contains(rank) ? readiness.ready(rank, key) : source.readable(rank, key);
    }

    /** Whether {@code key} of {@code rank} is read from the early source, once it can be read. */
    private boolean await(int rank, String key) throws IOException {
        try {
            return readiness.ready(rank, key).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            throw new IOException("rank " + rank + " did not become readable: "
                    + (c.getMessage() == null ? c.toString() : c.getMessage()), c);
        } catch (TimeoutException e) {
            throw new IOException("rank " + rank + " (" + key + ") did not become readable within "
                    + timeout.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for rank " + rank, e);
        }
    }
}
