package io.tenplex.datasets.streams;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A daemon's streamed-sample buffers of every job, as a typed Java API: local pushes and reads
 * (which wait without holding a thread), and the coordinator's work that involves the other
 * daemons of a job (create, end, delete, re-partition), run on its own threads through
 * {@link StreamPeers}. Routing between daemons (a push or read for a rank held elsewhere) is the
 * caller's: {@link #owner} names the daemon.
 */
public final class StreamService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StreamService.class);

    /** A push's outcome: where it went (or would go) and how it ended. */
    public record Pushed(int rank, String outcome) {
    }

    private final StreamPeers peers;
    private final ScheduledExecutorService timer;
    private final ExecutorService work;
    private final Map<String, JobStream> jobs = new ConcurrentHashMap<>();
    private volatile Predicate<String> self = a -> false;
    private volatile String selfAddress = "127.0.0.1:0";

    public StreamService(StreamPeers peers) {
        this.peers = peers;
        this.timer = Executors.newSingleThreadScheduledExecutor(daemonThreads("stream-timer"));
        this.work = Executors.newFixedThreadPool(2, daemonThreads("stream-coordinator"));
    }

    private static java.util.concurrent.ThreadFactory daemonThreads(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** Where this daemon listens: rank addresses at its port on this host are its own. */
    public void setSelf(String host, int port) {
        this.self = new SelfAddress(host, port);
        this.selfAddress = host + ":" + port;
    }

    /** This daemon's {@code host:port}, as given to {@link #setSelf}. */
    public String selfAddress() {
        return selfAddress;
    }

    public boolean isSelf(String addr) {
        return self.test(addr);
    }

    /** Creates the job's stream here and at every other daemon of its ranks (conflict if it exists). */
    public CompletableFuture<StreamStatus> create(String job, StreamConfig c) {
        if (jobs.containsKey(job)) {
            return CompletableFuture.failedFuture(StoreException.conflict("job " + job + " already has a stream "
                    + "(delete it first, or re-partition it)"));
        }
        return CompletableFuture.supplyAsync(() -> {
            for (String d : c.daemons()) {
                if (!isSelf(d)) {
                    peers.configure(d, job, c, false);
                }
            }
            configure(job, c, false);
            LOG.info("job={} stream created: {} over {} ranks", job, c.spec(), c.dp());
            return status(job);
        }, work);
    }

    /** Makes or replaces the job's stream here (a peer's call); its buffers start empty. */
    public void configure(String job, StreamConfig c, boolean frozen) {
        jobs.computeIfAbsent(job, j -> new JobStream(j, self, timer)).configure(c, frozen);
    }

    private JobStream stream(String job) {
        JobStream s = jobs.get(job);
        if (s == null) {
            throw StoreException.notFound("job " + job + " has no stream");
        }
        return s;
    }

    public StreamConfig config(String job) {
        return stream(job).config();
    }

    /** The rank a new sample goes to (by key, else round robin). */
    public int pick(String job, String key) {
        return stream(job).pick(key);
    }

    /** The daemon ({@code host:port}) that holds the rank's buffer. */
    public String owner(String job, int rank) {
        JobStream s = stream(job);
        s.buffer(rank); // checks the rank
        return s.owner(rank);
    }

    /**
     * Whether this daemon holds the rank's buffer; false too for a rank beyond this daemon's config
     * (a peer that already has a re-partition's new config relays a push or read for a new rank:
     * it is answered "moved", not refused). {@link #owner} refuses such a rank.
     */
    public boolean holds(String job, int rank) {
        return stream(job).holds(rank);
    }

    /**
     * Pushes a sample into a rank's buffer here, waiting up to {@code waitMillis} while it is full:
     * {@code accepted}, {@code full} (the wait ran out), {@code moved} (re-partitioning, or the rank is
     * not held here) or {@code ended}. The bytes are handed over.
     *
     * @throws StoreException too large for a sample over the stream's limit
     */
    public CompletableFuture<Pushed> push(String job, int rank, byte[] data, long waitMillis) {
        JobStream s = stream(job);
        int max = s.config().spec().maxSampleBytes();
        if (data.length > max) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "sample of " + data.length + " bytes over job " + job
                    + "'s limit of " + max);
        }
        RankBuffer b = s.buffer(rank);
        if (b == null) {
            return CompletableFuture.completedFuture(new Pushed(rank, "moved"));
        }
        return b.push(new Sample(s.nextId(), data, 0), waitMillis)
                .thenApply(p -> new Pushed(rank, p.name().toLowerCase(java.util.Locale.ROOT)));
    }

    /**
     * A batch of up to {@code n} samples' bytes from a rank's buffer here, waiting up to
     * {@code waitMillis} for one; empty when none came in time (or the rank is being moved);
     * {@code ended} once production is over and the buffer is empty.
     */
    public CompletableFuture<Batch> read(String job, int rank, int n, long waitMillis) {
        if (n < 1 || n > MAX_BATCH) {
            throw new IllegalArgumentException("batch size " + n + " (expected: 1 <= size <= " + MAX_BATCH + ")");
        }
        RankBuffer b = stream(job).buffer(rank);
        if (b == null) {
            return CompletableFuture.completedFuture(new Batch(List.of(), false));
        }
        return b.read(n, waitMillis).thenApply(r -> new Batch(r.samples().stream().map(Sample::data).toList(),
                r.ended()));
    }

    /** The most samples one batch read takes. */
    public static final int MAX_BATCH = 1 << 16;

    /** A batch's sample bytes (borrowed) and whether the rank's stream is over. */
    public record Batch(List<byte[]> samples, boolean ended) {
    }

    /**
     * Counts a producer's close (on rank 0's daemon); when every expected producer has closed,
     * production ends at every daemon. Answers the closes counted so far.
     */
    public CompletableFuture<Integer> close(String job) {
        JobStream s = stream(job);
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
    public CompletableFuture<StreamStatus> end(String job) {
        StreamConfig c = config(job);
        return CompletableFuture.supplyAsync(() -> {
            for (String d : c.daemons()) {
                if (!isSelf(d)) {
                    peers.end(d, job);
                }
            }
            endLocal(job);
            LOG.info("job={} stream production ended", job);
            return status(job);
        }, work);
    }

    public void endLocal(String job) {
        stream(job).endReception();
    }

    /** Forgets the job's stream here and at the other daemons of its ranks. */
    public CompletableFuture<Void> delete(String job) {
        StreamConfig c = config(job);
        return CompletableFuture.runAsync(() -> {
            for (String d : c.daemons()) {
                if (!isSelf(d)) {
                    peers.delete(d, job);
                }
            }
            deleteLocal(job);
        }, work);
    }

    public void deleteLocal(String job) {
        JobStream s = jobs.remove(job);
        if (s != null) {
            s.freezeAndDrain();
        }
    }

    /** Freezes the job's buffers here and takes out their samples (a re-partitioning's first step). */
    public Map<Integer, List<Sample>> exportLocal(String job) {
        return stream(job).freezeAndDrain();
    }

    public void importLocal(String job, Map<Integer, List<Sample>> byRank) {
        stream(job).restore(byRank);
    }

    public void unfreezeLocal(String job) {
        stream(job).unfreeze();
    }

    /**
     * Re-partitions the job's buffers over new ranks ({@code host:port} per rank), see
     * {@link Repartition}; answers the new status here.
     */
    public CompletableFuture<StreamStatus> repartition(String job, List<String> newRanks) {
        StreamConfig old = config(job);
        StreamConfig next = old.withRanks(newRanks);
        return CompletableFuture.supplyAsync(() -> {
            new Repartition(job, old, next, this, peers).run();
            return status(job);
        }, work);
    }

    public StreamStatus status(String job) {
        JobStream s = stream(job);
        return StreamStatus.of(job, s.config(), s.status());
    }

    /** The status of every job's stream here. */
    public List<StreamStatus> all() {
        List<StreamStatus> out = new ArrayList<>();
        for (String job : Set.copyOf(jobs.keySet())) {
            try {
                out.add(status(job));
            } catch (StoreException e) {
                // deleted meanwhile
            }
        }
        return out;
    }

    /** Every daemon of two configs, each once (old ones first). */
    static List<String> union(StreamConfig a, StreamConfig b) {
        Set<String> all = new LinkedHashSet<>(a.daemons());
        all.addAll(b.daemons());
        return List.copyOf(all);
    }

    @Override
    public void close() {
        work.shutdownNow();
        timer.shutdownNow();
        jobs.clear();
    }
}
