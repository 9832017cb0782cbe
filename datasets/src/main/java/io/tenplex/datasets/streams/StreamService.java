package io.tenplex.datasets.streams;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A daemon's streamed-sample buffers of every job, as a typed Java API: local pushes and reads
 * (which wait without holding a thread, {@link SampleTraffic}), and the coordinator's work that
 * involves the other daemons of a job (create, end, delete, re-partition), run on its own threads
 * through {@link StreamPeers} ({@link StreamCoordinator}). Routing between daemons (a push or read
 * for a rank held elsewhere) is the caller's: {@link #owner} names the daemon.
 */
public final class StreamService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StreamService.class);

    /** A push's outcome: where it went (or would go) and how it ended. */
    public record Pushed(int rank, String outcome) {
    }

    private final StreamPeers peers;
    private final StreamMemory memory;
    private final ScheduledExecutorService timer;
    private final StreamCoordinator coordinator;
    private final SampleTraffic traffic;
    private final CarriedSamples carried;
    private final Map<String, JobStream> jobs = new ConcurrentHashMap<>();
    private volatile Predicate<String> self = a -> false;
    private volatile String selfAddress = "127.0.0.1:0";
    private volatile Predicate<String> allowed = a -> true;

    public StreamService(StreamPeers peers) {
        this(peers, StreamMemory.ofMaxHeap());
    }

    /** @param memory the budget for the bytes of the samples held here */
    public StreamService(StreamPeers peers, StreamMemory memory) {
        this.memory = memory;
        this.peers = peers;
        this.timer = Executors.newSingleThreadScheduledExecutor(daemonThreads("stream-timer"));
        this.coordinator = new StreamCoordinator(this, peers);
        this.traffic = new SampleTraffic(memory);
        this.carried = new CarriedSamples(this, peers, timer, coordinator.work());
    }

    static java.util.concurrent.ThreadFactory daemonThreads(String name) {
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

    /**
     * Which daemons a stream request may name (besides this one): the daemon's own peers, or
     * daemons on hosts the operator allows as sources (as for a mount's peers). Every address is
     * allowed until this is called.
     */
    public void allowPeers(List<String> daemonPeers, io.tenplex.datasets.SourcePolicy policy) {
        this.allowed = new AllowedPeers(daemonPeers, policy);
    }

    /** Checks that every daemon a request names is this one, one of its peers or on an allowed host (else 403). */
    public void checkAllowed(List<String> daemons) {
        AllowedPeers.check(daemons, self, allowed);
    }

    /** Creates the job's stream at every daemon of its ranks (conflict if it exists), see {@link Creation}. */
    public CompletableFuture<StreamStatus> create(String job, StreamConfig c) {
        if (jobs.containsKey(job)) {
            return CompletableFuture.failedFuture(StoreException.conflict("job " + job + " already has a stream "
                    + "(delete it first, or re-partition it)"));
        }
        return coordinator.create(job, c);
    }

    /** Forgets the job's stream at a daemon, as a rollback: a failure is logged. */
    void forget(String daemon, String job) {
        try {
            if (isSelf(daemon)) {
                deleteLocal(job);
            } else {
                peers.delete(daemon, job);
            }
        } catch (RuntimeException e) {
            LOG.warn("job={} could not remove the stream at {}: {}", job, daemon, e.getMessage());
        }
    }

    /** Makes the job's stream here (a create's step); a conflict if it has one. */
    public void createLocal(String job, StreamConfig c) {
        JobStream s = new JobStream(job, self, timer, memory);
        s.configure(c, false);
        if (jobs.putIfAbsent(job, s) != null) {
            throw StoreException.conflict("job " + job + " already has a stream here");
        }
    }

    /**
     * A re-partitioning's config step here (a peer's call): makes the stream, or replaces it while
     * a re-partitioning holds it (frozen), its buffers empty; the config it already has changes
     * nothing; any other is a conflict.
     */
    public void configure(String job, StreamConfig c, boolean frozen) {
        JobStream fresh = new JobStream(job, self, timer, memory);
        fresh.configure(c, frozen);
        JobStream s = jobs.putIfAbsent(job, fresh);
        if (s != null) {
            s.configureStep(c, frozen);
            carried.place(job, s);
        }
    }

    JobStream stream(String job) {
        JobStream s = jobs.get(job);
        if (s == null) {
            throw StoreException.notFound("job " + job + " has no stream");
        }
        return s;
    }

    /** The budget for the bytes of the samples held here, and how much of it they use. */
    public StreamMemory memory() {
        return memory;
    }

    /** Whether a re-partitioning holds the job's stream here. */
    public boolean frozen(String job) {
        return stream(job).frozen();
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
     * not held here) or {@code ended}; {@code withdrawn} when {@code gone} (may be null) completed
     * while it waited (its producer went away: the sample is not stored, so a retry stores it once).
     * The bytes are handed over.
     *
     * @throws StoreException too large for a sample over the stream's limit
     */
    public CompletableFuture<Pushed> push(String job, int rank, byte[] data, long waitMillis, CompletableFuture<?> gone) {
        return push(job, rank, data, null, waitMillis, gone);
    }

    /**
     * As {@link #push(String, int, byte[], long, CompletableFuture)}, with the producer's id of the
     * sample ({@code id}, at most {@value PushIds#MAX_CHARS} characters; null: none): a push whose id
     * the rank's buffer stored lately is answered {@code duplicate} and not stored again, so a
     * producer that does not know how its push ended pushes again with the same id.
     */
    public CompletableFuture<Pushed> push(String job, int rank, byte[] data, String id, long waitMillis,
            CompletableFuture<?> gone) {
        return traffic.push(stream(job), job, rank, new SampleTraffic.Offer(data, PushIds.check(id)), waitMillis, gone);
    }

    /**
     * A batch of up to {@code n} samples' bytes from a rank's buffer here, waiting up to
     * {@code waitMillis} for one; empty when none came in time (or the rank is being moved);
     * {@code ended} once production is over and the buffer is empty; none taken when {@code gone}
     * (may be null) completed while it waited (its reader went away).
     */
    public CompletableFuture<StreamBatch> read(String job, int rank, int n, long waitMillis, CompletableFuture<?> gone) {
        if (n < 1 || n > MAX_BATCH) {
            throw new IllegalArgumentException("batch size " + n + " (expected: 1 <= size <= " + MAX_BATCH + ")");
        }
        JobStream s = stream(job);
        return SampleTraffic.read(s, rank, n, waitMillis, gone, (served, taken) -> {
            s.giveBack(served, rank, taken);
            carried.place(job, s);
        });
    }

    /** Takes back the samples of a relayed batch its reader never got, as {@link StreamBatch#unsent()} does. */
    public void giveBack(String job, int rank, List<Sample> returned) {
        JobStream s = stream(job);
        s.giveBack(rank, returned);
        carried.place(job, s);
    }


    /** The most samples one batch read takes. */
    public static final int MAX_BATCH = 1 << 16;
    /** The most sample bytes one batch may hold: a batch takes at most this over the stream's largest sample. */
    public static final long MAX_BATCH_BYTES = 256L << 20;

    /** A batch's size: {@code n}, at most {@link #MAX_BATCH_BYTES} over the largest sample (at least 1). */
    static int batchSize(StreamSpec spec, int n) {
        return (int) Math.min(n, Math.max(1, MAX_BATCH_BYTES / spec.maxSampleBytes()));
    }


    /**
     * Counts a producer's close (on rank 0's daemon); when every expected producer has closed,
     * production ends at every daemon. Answers the closes counted so far.
     */
    public CompletableFuture<Integer> close(String job) {
        return coordinator.close(job);
    }

    /** Ends production at every daemon of the job's stream: thresholds lift and buffers drain. */
    public CompletableFuture<StreamStatus> end(String job) {
        return coordinator.end(job);
    }

    public void endLocal(String job) {
        stream(job).endReception();
    }

    /** Forgets the job's stream here and at the other daemons of its ranks. */
    public CompletableFuture<Void> delete(String job) {
        return coordinator.delete(job);
    }

    public void deleteLocal(String job) {
        JobStream s = jobs.remove(job);
        if (s != null) {
            int dropped = s.delete();
            if (dropped > 0) {
                LOG.info("job={} {} samples given back after their rank moved go with the deleted stream", job, dropped);
            }
        }
    }

    /** The most sample bytes one message between daemons carries (a control body is at most 16 MiB). */
    public static final long MESSAGE_BYTES = 8L << 20;

    /**
     * A re-partitioning's first step here: freezes the job's buffers (only if its ranks are
     * {@code expectedRanks}; null: any) and answers the first page of their samples; a conflict
     * while another re-partitioning holds them.
     */
    public Map<Integer, List<Sample>> exportLocal(String job, List<String> expectedRanks) {
        return stream(job).export(expectedRanks, MESSAGE_BYTES);
    }

    /** The next page of an export here (empty: none left). */
    public Map<Integer, List<Sample>> exportNext(String job) {
        return stream(job).nextPage(MESSAGE_BYTES);
    }

    /** Whether an export here has samples left to hand over. */
    public boolean exporting(String job) {
        return stream(job).staging();
    }

    /** An export here, every page handed to {@code page}. */
    void exportAll(String job, List<String> expectedRanks, java.util.function.Consumer<Map<Integer, List<Sample>>> page) {
        page.accept(exportLocal(job, expectedRanks));
        while (exporting(job)) {
            page.accept(exportNext(job));
        }
    }

    /** Adds moved samples to the frozen buffers here (a conflict when not frozen). */
    public void importLocal(String job, Map<Integer, List<Sample>> byRank) {
        stream(job).restore(byRank);
    }

    /** Lets producers and readers in again (samples of an export not taken go back first). */
    public void unfreezeLocal(String job) {
        JobStream s = stream(job);
        s.unfreeze();
        carried.place(job, s);
    }

    /**
     * Re-partitions the job's buffers over new ranks ({@code host:port} per rank), see
     * {@link Repartition}; answers the new status here.
     *
     * @throws IllegalArgumentException a malformed address, before anything changes
     */
    public CompletableFuture<StreamStatus> repartition(String job, List<String> newRanks) {
        return coordinator.repartition(job, newRanks);
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

    @Override
    public void close() {
        coordinator.shutdown();
        timer.shutdownNow();
        jobs.clear();
    }
}
