package io.tenplex.datasets.streams;

import io.tenplex.datasets.streams.StreamService.Pushed;
import io.tenplex.store.StoreException;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The samples that pass through a daemon's rank buffers: a push takes its bytes from the daemon's
 * {@link StreamMemory} (and gives them back when the sample is not stored), a read takes a batch of
 * at most {@link StreamService#MAX_BATCH_BYTES} over the stream's largest sample. Both wait without
 * holding a thread; a rank not held here answers "moved" or an empty batch.
 */
final class SampleTraffic {
    private final StreamMemory memory;

    /** A producer's sample: its bytes (handed over) and its id (null: none). */
    record Offer(byte[] data, String id) {
    }

    SampleTraffic(StreamMemory memory) {
        this.memory = memory;
    }

    /** Pushes a sample into a rank's buffer of {@code s}, see {@link StreamService#push}. */
    CompletableFuture<Pushed> push(JobStream s, String job, int rank, Offer offer, long waitMillis,
            CompletableFuture<?> gone) {
        byte[] data = offer.data();
        int max = s.config().spec().maxSampleBytes();
        if (data.length > max) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "sample of " + data.length + " bytes over job " + job
                    + "'s limit of " + max);
        }
        RankBuffer b = s.buffer(rank);
        if (b == null) {
            return CompletableFuture.completedFuture(new Pushed(rank, "moved"));
        }
        if (!memory.tryReserve(data.length)) {
            if (data.length > memory.budget() || !b.holdsAny()) {
                throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE, "no room for a sample of "
                        + data.length + " bytes in this daemon's stream memory (" + memory.used() + " of "
                        + memory.budget() + " bytes held, none by rank " + rank + " of job " + job + ")");
            }
            return CompletableFuture.completedFuture(new Pushed(rank, "memory"));
        }
        return b.push(new Sample(s.nextId(), data, 0), offer.id(), waitMillis, gone).thenApply(p -> {
            if (p != RankBuffer.Push.ACCEPTED) {
                memory.release(data.length);
            }
            return new Pushed(rank, p.name().toLowerCase(java.util.Locale.ROOT));
        });
    }

    /**
     * A batch of up to {@code n} samples' bytes from a rank's buffer of {@code s}, see {@link StreamService#read};
     * {@code back} takes the samples of a batch that never reached its reader, with the buffer that served it.
     */
    static CompletableFuture<StreamBatch> read(JobStream s, int rank, int n, long waitMillis, CompletableFuture<?> gone,
            java.util.function.BiConsumer<RankBuffer, List<Sample>> back) {
        RankBuffer b = s.buffer(rank);
        if (b == null) {
            return CompletableFuture.completedFuture(new StreamBatch(List.of(), false));
        }
        return b.read(StreamService.batchSize(s.config().spec(), n), waitMillis, gone).thenApply(r -> new StreamBatch(r.samples().stream()
                .map(Sample::data).toList(), r.ended(), r.samples().isEmpty() ? null : () -> back.accept(b,
                        r.samples()), r.samples()));
    }
}
