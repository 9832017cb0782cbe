package io.tenplex.datasets.streams;

import java.security.SecureRandom;
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
    private final AtomicLong roundRobin = new AtomicLong();
    private final AtomicLong ids = new AtomicLong((long) new SecureRandom().nextInt(1 << 22) << 40);
    private volatile StreamConfig config;
    private volatile Map<Integer, RankBuffer> local = Map.of();

    JobStream(String job, Predicate<String> self, ScheduledExecutorService timer) {
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
                RankBuffer b = new RankBuffer(r, c.spec(), timer);
                if (frozen) {
                    b.freezeAndDrain();
                }
                if (c.ended()) {
                    b.endReception();
                }
                m.put(r, b);
            }
        }
        this.config = c;
        this.local = Map.copyOf(m);
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

    /** Freezes every buffer here and takes out its samples, by rank. */
    Map<Integer, List<Sample>> freezeAndDrain() {
        Map<Integer, List<Sample>> out = new TreeMap<>();
        local.values().forEach(b -> out.put(b.rank(), b.freezeAndDrain()));
        return out;
    }

    /** Adds moved samples to the buffers of their ranks here. */
    void restore(Map<Integer, List<Sample>> byRank) {
        byRank.forEach((rank, samples) -> {
            RankBuffer b = buffer(rank);
            if (b == null) {
                throw new IllegalArgumentException("rank " + rank + " of job " + job + " is not held here");
            }
            b.restore(samples);
        });
    }

    void unfreeze() {
        local.values().forEach(RankBuffer::unfreeze);
    }

    List<RankStatus> status() {
        List<RankStatus> out = new ArrayList<>();
        local.values().forEach(b -> out.add(b.status()));
        out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
        return out;
    }
}
