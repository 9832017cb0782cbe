package io.tenplex.datasets.streams;

import io.tenplex.store.StoreException;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * One job's stream on one daemon: its config and the buffers of the ranks this daemon holds. A new
 * config replaces the buffers (re-partitioning moves their samples first).
 */
final class JobStream {
    private final String job;
    private final Predicate<String> self;
    private final ScheduledExecutorService timer;
    private final StreamMemory memory;
    private final AtomicLong roundRobin = new AtomicLong();
    private final AtomicLong ids = new AtomicLong((long) new SecureRandom().nextInt(1 << 22) << 40);
    private volatile StreamConfig config;
    private volatile Map<Integer, RankBuffer> local = Map.of();
    /** Whether a re-partitioning holds the buffers here (from export or a frozen config to unfreeze). */
    private boolean frozen;
    /** Exported samples not yet handed over, by rank (they go back to their buffers at an unfreeze). */
    private final Map<Integer, ArrayDeque<Sample>> staged = new TreeMap<>();
    /**
     * Samples given back for a rank whose buffer here a new config replaced, or that another daemon
     * holds, by that rank: placed in this daemon's buffers once it is not frozen ({@link #placeCarried}).
     */
    private final Map<Integer, List<Sample>> carried = new TreeMap<>();
    /** Deleted here: nothing is carried any more. */
    private boolean deleted;

    JobStream(String job, Predicate<String> self, ScheduledExecutorService timer) {
        this(job, self, timer, StreamMemory.unlimited());
    }

    JobStream(String job, Predicate<String> self, ScheduledExecutorService timer, StreamMemory memory) {
        this.memory = memory;
        this.job = job;
        this.self = self;
        this.timer = timer;
    }

    /**
     * Takes a new config: fresh, empty buffers for the ranks held here (frozen when asked). Closes
     * and the end counted here meanwhile are kept (the larger count; ended if either says so).
     */
    synchronized void configure(StreamConfig given, boolean frozen) {
        StreamConfig c = config == null ? given : merged(given, config);
        Map<Integer, RankBuffer> m = new TreeMap<>();
        for (int r = 0; r < c.dp(); r++) {
            if (self.test(c.ranks().get(r))) {
                RankBuffer b = new RankBuffer(r, c.spec(), timer, memory);
                if (frozen) {
                    b.freezeAndDrain();
                }
                if (c.ended()) {
                    b.endReception();
                }
                m.put(r, b);
            }
        }
        Map<Integer, RankBuffer> old = local;
        this.config = c;
        this.local = Map.copyOf(m);
        this.frozen = frozen;
        old.values().forEach(b -> carry(b.rank(), b.retire())); // given back to the old buffers meanwhile
    }

    /**
     * A peer's config step: taken while a re-partitioning holds the stream here (frozen) or where it
     * holds no rank; the config it already has changes nothing (its samples stay); any other is a
     * conflict.
     */
    synchronized void configureStep(StreamConfig given, boolean frozenNext) {
        if (frozen && !staged.isEmpty()) {
            throw StoreException.conflict("job " + job + "'s stream is still being exported here");
        } else if (frozen || local.isEmpty()) { // a daemon that holds no rank has no samples to lose
            configure(given, frozenNext);
        } else if (!sameLayout(config, given)) {
            throw StoreException.conflict("job " + job + "'s stream is not being re-partitioned here (its config "
                    + "changes only between an export and an unfreeze)");
        }
    }

    /** Same spec, ranks and relaying daemons (closes and the end merge anyway). */
    static boolean sameLayout(StreamConfig a, StreamConfig b) {
        return a.spec().equals(b.spec()) && a.ranks().equals(b.ranks()) && a.others().equals(b.others());
    }

    synchronized boolean frozen() {
        return frozen;
    }

    private static StreamConfig merged(StreamConfig given, StreamConfig now) {
        StreamConfig c = given.withCloses(Math.max(given.closes(), now.closes()));
        return now.ended() ? c.asEnded() : c;
    }

    StreamConfig config() {
        return config;
    }

    synchronized void setConfig(StreamConfig c) {
        this.config = c;
    }

    /** The rank a sample goes to: by its key's hash, else the next in round-robin order. */
    int pick(String key) {
        int dp = config.dp();
        return key == null ? (int) Math.floorMod(roundRobin.getAndIncrement(), (long) dp)
                : Math.floorMod(key.hashCode(), dp);
    }

    /** The rank's buffer here, or null when another daemon holds it. */
    RankBuffer buffer(int rank) {
        int dp = config.dp();
        if (rank < 0 || rank >= dp) {
            throw new IllegalArgumentException("rank " + rank + " of job " + job + "'s stream (expected: 0 <= rank < "
                    + dp + ")");
        }
        return local.get(rank);
    }

    /** Whether the rank's buffer is here (any rank: one beyond the config is not). */
    boolean holds(int rank) {
        return local.containsKey(rank);
    }

    String owner(int rank) {
        return config.ranks().get(rank);
    }

    long nextId() {
        return ids.getAndIncrement();
    }

    void endReception() {
        synchronized (this) {
            config = config.asEnded();
        }
        local.values().forEach(RankBuffer::endReception);
    }

    /**
     * A re-partitioning's export: freezes the buffers and stages their samples, only from the config
     * the coordinator knows ({@code expectedRanks}, null: any) and only once (a frozen stream is
     * being re-partitioned by someone else: a conflict); answers the first page of at most
     * {@code maxBytes} of sample bytes (at least one sample). {@link #nextPage} answers the rest.
     */
    synchronized Map<Integer, List<Sample>> export(List<String> expectedRanks, long maxBytes) {
        if (frozen) {
            throw StoreException.conflict("job " + job + "'s stream is being re-partitioned; try again when it is done");
        }
        if (expectedRanks != null && !expectedRanks.equals(config.ranks())) {
            throw StoreException.conflict("job " + job + "'s stream has ranks " + config.ranks() + " here, not "
                    + expectedRanks + " (re-partitioned meanwhile?)");
        }
        freezeAndDrain().forEach((rank, list) -> staged.put(rank, new ArrayDeque<>(list)));
        return nextPage(maxBytes);
    }

    /** The next page of staged samples (empty when none is left); only while frozen. */
    synchronized Map<Integer, List<Sample>> nextPage(long maxBytes) {
        if (!frozen) {
            throw StoreException.conflict("job " + job + "'s stream is not being exported here");
        }
        Map<Integer, List<Sample>> page = new TreeMap<>();
        long bytes = 0;
        for (Map.Entry<Integer, ArrayDeque<Sample>> e : staged.entrySet()) {
            ArrayDeque<Sample> q = e.getValue();
            while (!q.isEmpty() && (bytes == 0 || bytes + q.peekFirst().data().length <= maxBytes)) {
                Sample s = q.removeFirst();
                bytes += s.data().length + 1;
                page.computeIfAbsent(e.getKey(), r -> new ArrayList<>()).add(s);
            }
        }
        staged.values().removeIf(ArrayDeque::isEmpty);
        return page;
    }

    /** Whether staged samples are left to export. */
    synchronized boolean staging() {
        return !staged.isEmpty();
    }

    /** Freezes every buffer here and takes out its samples, by rank. */
    synchronized Map<Integer, List<Sample>> freezeAndDrain() {
        frozen = true;
        Map<Integer, List<Sample>> out = new TreeMap<>();
        local.values().forEach(b -> out.put(b.rank(), b.freezeAndDrain()));
        return out;
    }

    /** Adds moved samples to the buffers of their ranks here. */
    synchronized void restore(Map<Integer, List<Sample>> byRank) {
        if (deleted) {
            throw StoreException.notFound("job " + job + " has no stream (deleted)");
        }
        if (!frozen) {
            throw StoreException.conflict("job " + job + "'s stream is not being re-partitioned here (samples are "
                    + "imported only between a frozen config and its unfreeze)");
        }
        for (int rank : byRank.keySet()) { // every rank checked before any sample moves
            if (buffer(rank) == null) {
                throw new IllegalArgumentException("rank " + rank + " of job " + job + " is not held here");
            }
        }
        byRank.forEach((rank, samples) -> buffer(rank).restore(samples));
    }

    /** Lets producers and readers in again; nothing to do when not frozen. */
    synchronized void unfreeze() {
        if (deleted) {
            return;
        }
        staged.forEach((rank, q) -> local.get(rank).restore(new ArrayList<>(q))); // an export not taken
        staged.clear();
        frozen = false;
        local.values().forEach(RankBuffer::unfreeze);
    }

    /**
     * Puts back a batch that never reached its reader into the rank's buffer here (a relaying daemon
     * names only the rank); when a new config replaced that buffer, or another daemon holds the rank,
     * the samples are carried ({@link #placeCarried} places them).
     */
    void giveBack(int rank, List<Sample> batch) {
        RankBuffer now = rank >= 0 && rank < config.dp() ? local.get(rank) : null;
        if (now != null) {
            giveBack(now, rank, batch);
        } else {
            batch.forEach(Sample::unread);
            carry(rank, batch);
        }
    }

    /** Puts back a batch that {@code served} (a buffer of this stream's, maybe replaced since) handed out. */
    void giveBack(RankBuffer served, int rank, List<Sample> batch) {
        carry(rank, served.giveBack(batch));
    }

    /** Carries given-back samples (reads undone) to be placed; none once the stream is deleted here. */
    private synchronized void carry(int rank, List<Sample> samples) {
        if (samples.isEmpty()) {
            return;
        }
        if (deleted) {
            org.slf4j.LoggerFactory.getLogger(JobStream.class).info("job={} {} samples given back for rank {} go with "
                    + "the deleted stream", job, samples.size(), rank);
            return;
        }
        samples.forEach(s -> memory.force(s.data().length));
        carried.computeIfAbsent(rank, r -> new ArrayList<>()).addAll(samples);
    }

    /**
     * Places the carried samples in the buffers here (their rank's, else round robin over the ranks
     * held here) once not frozen; answers those it could not place (this daemon holds no rank), by
     * rank, for the rank's owner.
     */
    synchronized Map<Integer, List<Sample>> placeCarried() {
        if (frozen || carried.isEmpty()) {
            return Map.of();
        }
        Map<Integer, List<Sample>> away = new TreeMap<>();
        List<RankBuffer> here = List.copyOf(local.values());
        int next = 0;
        for (Map.Entry<Integer, List<Sample>> e : carried.entrySet()) {
            e.getValue().forEach(s -> memory.release(s.data().length));
            RankBuffer b = local.get(e.getKey());
            if (b == null && !here.isEmpty()) {
                b = here.get(next++ % here.size());
            }
            if (b == null) {
                away.put(e.getKey(), e.getValue());
            } else {
                b.takeCarried(e.getValue());
            }
        }
        carried.clear();
        return away;
    }

    /** Deleted here: freezes and empties the buffers, and drops the carried samples; answers how many. */
    synchronized int delete() {
        freezeAndDrain();
        deleted = true;
        int n = 0;
        for (List<Sample> l : carried.values()) {
            l.forEach(s -> memory.release(s.data().length));
            n += l.size();
        }
        carried.clear();
        return n;
    }

    /** Carries samples again that could not be placed or sent (their reads already undone). */
    void carryAgain(int rank, List<Sample> samples) {
        carry(rank, samples);
    }

    List<RankStatus> status() {
        List<RankStatus> out = new ArrayList<>();
        local.values().forEach(b -> out.add(b.status()));
        out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
        return out;
    }
}
