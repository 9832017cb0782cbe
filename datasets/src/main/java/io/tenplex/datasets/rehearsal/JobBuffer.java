package io.tenplex.datasets.rehearsal;

import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * A job's rehearsal state on one daemon: its configuration, the buffers of the ranks served here, a
 * sampling random generator per rank, the ranks a re-partition has gathered but not yet switched to,
 * and what each rank's buffer did ({@link RehearsalStats}). Thread-safe (its own lock; the rank
 * buffers lock themselves).
 */
final class JobBuffer {
    final RehearsalConfig config;
    private final Map<Integer, RankBuffer> ranks = new TreeMap<>();
    private final Map<Integer, Random> samplers = new TreeMap<>();
    private final Map<Integer, RehearsalStats> stats = new TreeMap<>();
    private Map<Integer, RankBuffer> staged;

    JobBuffer(RehearsalConfig config) {
        this.config = config;
    }

    synchronized RankBuffer rank(int rank) {
        return ranks.computeIfAbsent(rank, r -> new RankBuffer(config, r));
    }

    /** What rank {@code rank} did here (kept across re-partitions). */
    synchronized RehearsalStats stats(int rank) {
        return stats.computeIfAbsent(rank, r -> new RehearsalStats());
    }

    /** Every rank with stats here, by rank. */
    synchronized Map<Integer, RehearsalStats> allStats() {
        return new TreeMap<>(stats);
    }

    synchronized RankBuffer existing(int rank) {
        return ranks.get(rank);
    }

    /** The generator of rank {@code rank}'s sampling: seeded from the configuration and the rank. */
    synchronized Random sampler(int rank) {
        return samplers.computeIfAbsent(rank, r -> new Random(config.seed() * 7_919L + 31L * r + 17));
    }

    synchronized Map<Integer, RankBuffer> ranks() {
        return new TreeMap<>(ranks);
    }

    synchronized Map<Integer, int[]> counts() {
        Map<Integer, int[]> c = new TreeMap<>();
        ranks.forEach((r, b) -> c.put(r, b.counts()));
        return c;
    }

    synchronized long bytes() {
        return ranks.values().stream().mapToLong(RankBuffer::bytes).sum();
    }

    synchronized void stage(Map<Integer, RankBuffer> next) {
        staged = next;
    }

    synchronized long stagedBytes() {
        return staged == null ? 0 : staged.values().stream().mapToLong(RankBuffer::bytes).sum();
    }

    /** Switches to the staged ranks (none staged here: this daemon keeps no rank); answers the bytes freed. */
    synchronized long commit() {
        long before = bytes();
        ranks.clear();
        samplers.clear();
        if (staged != null) {
            ranks.putAll(staged);
        }
        staged = null;
        return before;
    }

    synchronized void abort() {
        staged = null;
    }

    /** The representatives of {@code slots} held here (null where none is). */
    synchronized List<Sample> read(List<RehearsalPeers.Slot> slots) {
        return slots.stream().map(s -> {
            RankBuffer b = ranks.get(s.rank());
            return b == null ? null : b.get(s.cls(), s.slot());
        }).toList();
    }
}
