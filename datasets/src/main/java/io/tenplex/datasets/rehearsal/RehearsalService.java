package io.tenplex.datasets.rehearsal;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiPredicate;
import java.util.function.Supplier;

/**
 * The rehearsal buffers of the jobs on one daemon, as a typed API: configure a job's buffer, offer a
 * rank's candidates, draw r representatives for a rank (global or local), answer the other daemons
 * (counts, reads, the two phases of a re-partition) and coordinate a re-partition. Representatives are
 * held in the heap within a byte budget. Thread-safe; the calls that wait for other daemons are
 * {@link #sample} (asynchronous) and {@link #repartition}/{@link #prepare} (blocking: never on an event
 * loop).
 */
public final class RehearsalService {
    /** What a job's buffer on this daemon holds. */
    public record Status(String daemon, RehearsalConfig config, Map<Integer, int[]> ranks, long bytes) {
    }

    /** The answer of a re-partition. */
    public record Repartitioned(int daemons, int ranks, long representatives, long moved) {
    }

    private final RehearsalPeers peers;
    private final long budget;
    private final String id = UUID.randomUUID().toString();
    private final Map<String, JobBuffer> jobs = new ConcurrentHashMap<>();
    private final AtomicLong used = new AtomicLong();
    private final Sampling sampling;
    private volatile Supplier<List<String>> others = List::of;
    private volatile String selfAddress = "";
    private volatile BiPredicate<String, Integer> allowedHosts = (host, port) -> false;

    /** @param budget the most bytes of representatives this daemon holds, all jobs together */
    public RehearsalService(RehearsalPeers peers, long budget) {
        this.peers = peers;
        this.budget = budget;
        this.sampling = new Sampling(peers, id);
    }

    /** This daemon's id among the daemons of its jobs' buffers (random, per process). */
    public String id() {
        return id;
    }

    /** The daemons whose buffers a global draw includes (may include this one: it is recognised by its id). */
    public void setPeers(Supplier<List<String>> addresses) {
        this.others = addresses;
    }

    /** This daemon's address as the other daemons reach it (for re-partitions it coordinates). */
    public void setSelfAddress(String address) {
        this.selfAddress = address;
    }

    /**
     * The hosts outside the peers whose daemons a re-partition may call ({@code tenplexd --allow-source-host}):
     * a test of host and port. None by default: only the peers and this daemon.
     */
    public void setAllowedHosts(BiPredicate<String, Integer> hosts) {
        this.allowedHosts = hosts;
    }

    /**
     * Sets up {@code job}'s buffer here; the same configuration again changes nothing.
     *
     * @return whether it was made now
     * @throws StoreException conflict if the job has another configuration here
     */
    public boolean configure(String job, RehearsalConfig config) {
        JobBuffer jb = jobs.computeIfAbsent(job, j -> new JobBuffer(config));
        if (!jb.config.equals(config)) {
            throw StoreException.conflict("job " + job + " has a rehearsal buffer with " + jb.config
                    + "; drop it first to use " + config);
        }
        return jb.config == config;
    }

    /**
     * Whether a re-partition of {@code job} has anything to do: a buffer of it here, or peers that may
     * hold one (a daemon alone without one: no daemon has the job's buffer).
     */
    public boolean mayHold(String job) {
        return jobs.containsKey(job) || !others.get().isEmpty();
    }

    /** @throws StoreException not found */
    public Status status(String job) {
        JobBuffer jb = job(job);
        return new Status(id, jb.config, jb.counts(), jb.bytes());
    }

    /** Forgets {@code job}'s buffer here; answers whether there was one. */
    public boolean drop(String job) {
        JobBuffer jb = jobs.remove(job);
        if (jb != null) {
            used.addAndGet(-jb.bytes());
        }
        return jb != null;
    }

    /**
     * Inserts a rank's candidates into its class memories.
     *
     * @throws StoreException not found (no buffer), insufficient storage (over the budget: nothing inserted)
     * @throws IllegalArgumentException a class out of range (nothing inserted)
     */
    public RankBuffer.Offered update(String job, int rank, List<Sample> candidates) {
        JobBuffer jb = job(job);
        long incoming = candidates.stream().mapToLong(Sample::bytes).sum();
        if (used.get() + incoming > budget) {
            throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE, "rehearsal buffers hold "
                    + used.get() + " bytes; " + incoming + " more would pass the budget of " + budget + " bytes");
        }
        RankBuffer.Offered o = jb.offer(rank, candidates);
        used.addAndGet(o.bytesAdded());
        jb.stats(rank).offered(o);
        return o;
    }

    /** Up to {@code r} representatives for {@code rank}: from every daemon's buffers, or only its own. */
    public CompletableFuture<List<Sample>> sample(String job, int rank, int r, boolean global) {
        JobBuffer jb = job(job);
        long t = System.nanoTime();
        CompletableFuture<List<Sample>> drawn = global ? sampling.global(job, jb, rank, r, others.get())
                : CompletableFuture.completedFuture(sampling.local(jb, rank, r));
        return drawn.thenApply(got -> {
            jb.stats(rank).drew(got.size(), System.nanoTime() - t);
            return got;
        });
    }

    /**
     * A trainer's report of its last augment: how long it waited for the draw ({@code 0}: it was ready).
     *
     * @throws StoreException not found (no buffer)
     */
    public void augmented(String job, int rank, long waitedMicros) {
        job(job).stats(rank).augmented(Math.max(0, waitedMicros));
    }

    /** What one rank's buffer holds here (per class; none after a re-partition moved it) and what it did. */
    public record RankMetrics(String job, int rank, int[] counts, long bytes, RehearsalStats.Snapshot stats) {
    }

    /** Every job's ranks with a buffer or stats here, for {@code /metrics}. */
    public List<RankMetrics> metrics() {
        List<RankMetrics> out = new ArrayList<>();
        jobs.forEach((job, jb) -> {
            Map<Integer, RankBuffer> held = jb.ranks();
            Map<Integer, RehearsalStats> stats = jb.allStats();
            java.util.Set<Integer> ranks = new java.util.TreeSet<>(held.keySet());
            ranks.addAll(stats.keySet());
            for (int r : ranks) {
                RankBuffer b = held.get(r);
                out.add(new RankMetrics(job, r, b == null ? new int[jb.config.classes()] : b.counts(),
                        b == null ? 0 : b.bytes(), jb.stats(r).snapshot()));
            }
        });
        return out;
    }

    /** What this daemon holds of {@code job} (no configuration and no ranks when it has no buffer of it). */
    public RehearsalPeers.Counts counts(String job) {
        JobBuffer jb = jobs.get(job);
        return jb == null ? new RehearsalPeers.Counts(id, null, Map.of())
                : new RehearsalPeers.Counts(id, jb.config, jb.counts());
    }

    /** The representatives of {@code slots} held here, those no longer held left out. */
    public List<Sample> read(String job, List<RehearsalPeers.Slot> slots) {
        return job(job).read(slots).stream().filter(java.util.Objects::nonNull).toList();
    }

    /**
     * Re-partitions {@code job}'s buffer over new ranks (blocking; coordinates every daemon involved).
     *
     * @param targets new data-parallel rank to the address of the daemon that serves it
     */
    public Repartitioned repartition(String job, Map<Integer, String> targets) throws Exception {
        targets.values().forEach(this::checkAddress);
        Resharding.Outcome o = new Resharding(peers, id, selfAddress, new Resharding.Participant() {
            @Override
            public void prepare(String j, RehearsalPeers.Moves moves) throws Exception {
                RehearsalService.this.prepare(j, moves);
            }

            @Override
            public void finish(String j, boolean commit) {
                RehearsalService.this.finish(j, commit);
            }
        }).run(job, jobs.get(job), targets, others.get());
        return new Repartitioned(o.daemons(), o.ranks(), o.representatives(), o.moved());
    }

    /**
     * A re-partition's first step here: holds the job's updates off (until {@link #finish}) and answers what
     * this daemon holds of it (no hold where it has no buffer of the job).
     */
    public RehearsalPeers.Counts hold(String job) {
        JobBuffer jb = jobs.get(job);
        if (jb != null) {
            jb.hold();
        }
        return counts(job);
    }

    /**
     * Phase one of a re-partition here: gathers the new ranks' representatives aside (blocking). The same
     * moves again (prepared or committed) change nothing.
     *
     * @throws StoreException conflict if other moves are prepared here; forbidden for a daemon address that is
     *     neither a peer nor on an allowed host
     */
    public void prepare(String job, RehearsalPeers.Moves moves) throws Exception {
        moves.ranks().values().forEach(refs -> refs.stream().filter(r -> !r.daemon().equals(id))
                .forEach(r -> checkAddress(String.valueOf(moves.daemons().get(r.daemon())))));
        configure(job, moves.config());
        JobBuffer jb = job(job);
        if (!jb.needs(moves)) {
            return;
        }
        Map<Integer, RankBuffer> next = new HashMap<>();
        for (var e : moves.ranks().entrySet()) {
            List<Sample> got = gather(job, jb, moves, e.getValue(), jb.stats(e.getKey()));
            if (got.size() != e.getValue().size()) {
                throw StoreException.conflict("rank " + e.getKey() + " of job " + job + ": " + got.size() + " of "
                        + e.getValue().size() + " representatives found");
            }
            RankBuffer b = new RankBuffer(jb.config, e.getKey());
            b.offer(got);
            next.put(e.getKey(), b);
        }
        jb.stage(moves, next);
    }

    private List<Sample> gather(String job, JobBuffer jb, RehearsalPeers.Moves moves, List<RehearsalPeers.Ref> refs,
            RehearsalStats stats) throws Exception {
        Map<String, List<RehearsalPeers.Slot>> byDaemon = new java.util.LinkedHashMap<>();
        refs.forEach(r -> byDaemon.computeIfAbsent(r.daemon(), d -> new ArrayList<>()).add(r.slot()));
        List<Sample> out = new ArrayList<>();
        for (var e : byDaemon.entrySet()) {
            boolean here = e.getKey().equals(id);
            List<Sample> got = here ? jb.read(e.getValue())
                    : peers.fetch(moves.daemons().get(e.getKey()), job, e.getValue()).get(300, java.util.concurrent.TimeUnit.SECONDS);
            got.stream().filter(java.util.Objects::nonNull).forEach(out::add);
            if (!here) {
                stats.fetched(got.stream().filter(java.util.Objects::nonNull).mapToLong(Sample::bytes).sum(), false);
            }
        }
        return out;
    }

    /**
     * Phase two here: switch to the gathered ranks, or forget them (and let updates in again).
     *
     * @throws StoreException conflict: a commit with nothing prepared (nothing changes; again after a commit: a no-op)
     */
    public void finish(String job, boolean commit) {
        JobBuffer jb = jobs.get(job);
        if (jb == null) {
            if (commit) {
                throw StoreException.conflict("job " + job + " has no rehearsal buffer here: nothing to commit");
            }
            return;
        }
        if (commit) {
            long staged = jb.stagedBytes();
            used.addAndGet(staged - jb.commit());
        } else {
            jb.abort();
        }
    }

    /** The bytes of representatives held here, all jobs together. */
    public long usedBytes() {
        return used.get();
    }

    /** A daemon address a re-partition may call: a peer, this daemon, or on an allowed host (else 403). */
    private void checkAddress(String address) {
        if (address.equals(selfAddress) || others.get().contains(address)) {
            return;
        }
        int colon = address.lastIndexOf(':');
        int port = -1;
        try {
            port = colon > 0 ? Integer.parseInt(address.substring(colon + 1)) : -1;
        } catch (NumberFormatException e) {
            // below
        }
        if (port < 1 || port > 65535 || address.chars().anyMatch(c -> c == '/' || c == '@' || c == '?' || c == '#'
                || Character.isWhitespace(c))) {
            throw new IllegalArgumentException("daemon address '" + address + "' is not host:port");
        }
        if (!allowedHosts.test(address.substring(0, colon), port)) {
            throw new StoreException(StoreException.Kind.FORBIDDEN, "daemon address '" + address + "' is neither one"
                    + " of this daemon's --peers nor on a host allowed with tenplexd --allow-source-host HOST[:PORT]");
        }
    }

    private JobBuffer job(String job) {
        JobBuffer jb = jobs.get(job);
        if (jb == null) {
            throw StoreException.notFound("job " + job + " has no rehearsal buffer on this daemon");
        }
        return jb;
    }
}
