package io.tenplex.datasets.streams;

import io.tenplex.store.StoreException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator's work on a job's stream that involves the other daemons of its ranks: creating
 * it ({@link Creation}), counting producers' closes, ending production, deleting it and
 * re-partitioning it ({@link Repartition}), each run on the coordinator's own threads through
 * {@link StreamPeers}; the steps here go to the daemon's {@link StreamService}.
 */
final class StreamCoordinator {
    private static final Logger LOG = LoggerFactory.getLogger(StreamService.class);

    private final StreamService local;
    private final StreamPeers peers;
    private final ExecutorService work;

    StreamCoordinator(StreamService local, StreamPeers peers) {
        this.local = local;
        this.peers = peers;
        this.work = Executors.newFixedThreadPool(2, StreamService.daemonThreads("stream-coordinator"));
    }

    /** Creates the job's stream at every daemon of its ranks, see {@link Creation}. */
    CompletableFuture<StreamStatus> create(String job, StreamConfig c) {
        return CompletableFuture.supplyAsync(() -> {
            new Creation(job, c, local, peers).run();
            return local.status(job);
        }, work);
    }

    /**
     * Counts a producer's close (on rank 0's daemon); when every expected producer has closed,
     * production ends at every daemon. Answers the closes counted so far.
     */
    CompletableFuture<Integer> close(String job) {
        JobStream s = local.stream(job);
        int closes;
        synchronized (s) {
            closes = s.config().closes() + 1;
            s.setConfig(s.config().withCloses(closes));
        }
        int expected = s.config().spec().producers();
        if (expected > 0 && closes == expected) {
            return end(job).thenApply(v -> closes);
        }
        return CompletableFuture.completedFuture(closes);
    }

    /** Ends production at every daemon of the job's stream: thresholds lift and buffers drain. */
    CompletableFuture<StreamStatus> end(String job) {
        StreamConfig c = local.config(job);
        return CompletableFuture.supplyAsync(() -> {
            for (String d : c.daemons()) {
                if (!local.isSelf(d)) {
                    peers.end(d, job);
                }
            }
            local.endLocal(job);
            LOG.info("job={} stream production ended", job);
            return local.status(job);
        }, work);
    }

    /** Forgets the job's stream here and at the other daemons of its ranks. */
    CompletableFuture<Void> delete(String job) {
        StreamConfig c = local.config(job);
        return CompletableFuture.runAsync(() -> {
            for (String d : c.daemons()) {
                if (!local.isSelf(d)) {
                    peers.delete(d, job);
                }
            }
            local.deleteLocal(job);
        }, work);
    }

    /**
     * Re-partitions the job's buffers over new ranks ({@code host:port} per rank), see
     * {@link Repartition}; answers the new status here.
     *
     * @throws IllegalArgumentException a malformed address, before anything changes
     */
    CompletableFuture<StreamStatus> repartition(String job, List<String> newRanks) {
        if (local.frozen(job)) { // another re-partitioning is under way: its config here may be half given out
            return CompletableFuture.failedFuture(StoreException.conflict("job " + job + "'s stream is being "
                    + "re-partitioned; try again when it is done"));
        }
        StreamConfig old = local.config(job);
        StreamConfig next = old.withRanks(newRanks);
        return CompletableFuture.supplyAsync(() -> {
            new Repartition(job, old, next, local, peers).run();
            return local.status(job);
        }, work);
    }

    /** The coordinator's threads, for other blocking calls to peers. */
    java.util.concurrent.Executor work() {
        return work;
    }

    /** Stops the coordinator's threads. */
    void shutdown() {
        work.shutdownNow();
    }
}
