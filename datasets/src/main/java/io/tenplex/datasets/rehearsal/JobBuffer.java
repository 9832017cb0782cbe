package io.tenplex.datasets.rehearsal;

import io.tenplex.store.StoreException;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A job's rehearsal state on one daemon: its configuration, the buffers of the ranks served here, a
 * sampling random generator per rank, the ranks a re-partition has gathered but not yet switched
 * to, and what each rank's buffer did ({@link RehearsalStats}). From a re-partition's hold (before its
 * counts are read) until its commit or abort, updates are refused (retry later), so that none is
 * answered and then left behind by the switch; a hold lapses after {@link #HOLD_NANOS} (and what it
 * staged with it). Thread-safe (its own lock; the rank buffers lock themselves).
 */
final class JobBuffer {
    /** How long a re-partition holds updates off at most (its coordinator waits 300 s per call). */
    static final long HOLD_NANOS = TimeUnit.MINUTES.toNanos(15);
    final RehearsalConfig config;
    private final Map<Integer, RankBuffer> ranks = new TreeMap<>();
    private final Map<Integer, Random> samplers = new TreeMap<>();
    private final Map<Integer, RehearsalStats> stats = new TreeMap<>();
    private Map<Integer, RankBuffer> staged;
    private RehearsalPeers.Moves stagedMoves;
    private RehearsalPeers.Moves committedMoves;
    private long heldSince;
    private boolean held;

    JobBuffer(RehearsalConfig config) {
        this.config = config;
    }

    synchronized RankBuffer rank(int rank) {
        return ranks.computeIfAbsent(rank, r -> new RankBuffer(config, r));
    }

    /** Offers candidates to rank {@code rank}, unless a re-partition holds updates off (unavailable: retry). */
    synchronized RankBuffer.Offered offer(int rank, List<Sample> candidates) {
        if (held()) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "the rehearsal buffer is being re-partitioned;"
                    + " retry the update when it is done");
        }
        return rank(rank).offer(candidates);
    }

    /** Holds updates off until the re-partition's commit or abort (or the hold lapses): a new re-partition. */
    synchronized void hold() {
        held = true;
        heldSince = System.nanoTime();
        committedMoves = null; // its moves are new, even where they read as the last ones
    }

    synchronized boolean held() {
        if (held && System.nanoTime() - heldSince > HOLD_NANOS) {
            held = false; // lapsed: whatever was staged under it is forgotten
            staged = null;
            stagedMoves = null;
        }
        return held;
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

    /**
     * Whether {@code moves} still need gathering: false when they are the ones staged or last committed (an
     * identical repeat: nothing to do).
     *
     * @throws StoreException conflict if other moves are staged
     */
    synchronized boolean needs(RehearsalPeers.Moves moves) {
        if (held() && staged != null) {
            if (moves.equals(stagedMoves)) {
                return false;
            }
            throw StoreException.conflict("another re-partition of the rehearsal buffer is prepared here; commit or"
                    + " abort it first");
        }
        return !moves.equals(committedMoves);
    }

    /** Sets the gathered ranks of {@code moves} aside (and holds updates off until the commit or abort). */
    synchronized void stage(RehearsalPeers.Moves moves, Map<Integer, RankBuffer> next) {
        if (needs(moves)) {
            staged = next;
            stagedMoves = moves;
            committedMoves = null;
            hold();
        }
    }

    synchronized long stagedBytes() {
        return staged == null ? 0 : staged.values().stream().mapToLong(RankBuffer::bytes).sum();
    }

    /**
     * Switches to the staged ranks (an empty set of them: this daemon keeps no rank); answers the bytes freed.
     * Again after a commit, nothing changes (0 freed).
     *
     * @throws StoreException conflict if nothing is prepared (nothing changes)
     */
    synchronized long commit() {
        if (!held() || staged == null) {
            if (committedMoves != null) {
                return 0; // an identical repeat of the commit
            }
            throw StoreException.conflict("no re-partition of the rehearsal buffer is prepared here (or its hold"
                    + " lapsed); nothing to commit");
        }
        long before = bytes();
        ranks.clear();
        samplers.clear();
        ranks.putAll(staged);
        committedMoves = stagedMoves;
        staged = null;
        stagedMoves = null;
        held = false;
        return before;
    }

    /** Forgets the staged ranks and lets updates in again (nothing staged: nothing to forget). */
    synchronized void abort() {
        staged = null;
        stagedMoves = null;
        held = false;
    }

    /** The representatives of {@code slots} held here (null where none is). */
    synchronized List<Sample> read(List<RehearsalPeers.Slot> slots) {
        return slots.stream().map(s -> {
            RankBuffer b = ranks.get(s.rank());
            return b == null ? null : b.get(s.cls(), s.slot());
        }).toList();
    }
}
