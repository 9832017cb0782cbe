package io.tenplex.datasets.rehearsal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One draw of r representatives for a rank: from the whole job's buffer across daemons (global: the
 * counts of every daemon, one pick over all of them, one fetch per daemon holding picks, all in
 * parallel), or from the rank's own buffer only (local: the paper's naive embarrassingly parallel
 * strategy, kept for comparison). A daemon that cannot be asked is left out of the draw and logged.
 */
final class Sampling {
    private static final Logger LOG = LoggerFactory.getLogger(Sampling.class);

    private final RehearsalPeers peers;
    private final String self;
    /** Addresses that answered with this daemon's own id: not asked again. */
    private final java.util.Set<String> selfAddresses = java.util.concurrent.ConcurrentHashMap.newKeySet();

    Sampling(RehearsalPeers peers, String self) {
        this.peers = peers;
        this.self = self;
    }

    List<Sample> local(JobBuffer jb, int rank, int r) {
        RankBuffer b = jb.existing(rank);
        if (b == null) {
            return List.of();
        }
        List<GlobalSampler.Pick> picks = pick(jb, rank, List.of(new GlobalSampler.Holding(0, rank, b.counts())), r);
        List<Sample> out = new ArrayList<>();
        for (GlobalSampler.Pick p : picks) {
            Sample s = b.get(p.cls(), p.slot());
            if (s != null) {
                out.add(s);
            }
        }
        return out;
    }

    CompletableFuture<List<Sample>> global(String job, JobBuffer jb, int rank, int r, List<String> all) {
        List<String> others = all.stream().filter(a -> !selfAddresses.contains(a)).toList();
        List<CompletableFuture<RehearsalPeers.Counts>> asked = new ArrayList<>();
        for (String peer : others) {
            asked.add(peers.counts(peer, job).exceptionally(e -> {
                LOG.warn("job={} rank={} rehearsal counts of {} not read, left out of the draw: {}", job, rank, peer,
                        e.toString());
                return null;
            }));
        }
        return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).thenCompose(v -> {
            List<String> where = new ArrayList<>(List.of(""));
            List<GlobalSampler.Holding> holdings = new ArrayList<>();
            jb.counts().forEach((rk, c) -> holdings.add(new GlobalSampler.Holding(0, rk, c)));
            for (int i = 0; i < asked.size(); i++) {
                RehearsalPeers.Counts c = asked.get(i).join();
                if (c != null && c.daemon().equals(self)) {
                    selfAddresses.add(others.get(i));
                }
                if (c == null || c.daemon().equals(self) || c.config() == null) {
                    continue; // unreachable, this daemon itself, or no buffer of the job there
                }
                int source = where.size();
                where.add(others.get(i));
                c.ranks().forEach((rk, n) -> holdings.add(new GlobalSampler.Holding(source, rk, n)));
            }
            return fetch(job, jb, where, pick(jb, rank, holdings, r), jb.stats(rank));
        });
    }

    private static List<GlobalSampler.Pick> pick(JobBuffer jb, int rank, List<GlobalSampler.Holding> holdings, int r) {
        Random random = jb.sampler(rank);
        synchronized (random) {
            return GlobalSampler.pick(holdings, r, random);
        }
    }

    /** Reads the picks held here, fetches the others (one call per daemon); answers them grouped by daemon. */
    private CompletableFuture<List<Sample>> fetch(String job, JobBuffer jb, List<String> where,
            List<GlobalSampler.Pick> picks, RehearsalStats stats) {
        Map<Integer, List<RehearsalPeers.Slot>> bySource = new HashMap<>();
        for (GlobalSampler.Pick p : picks) {
            bySource.computeIfAbsent(p.source(), s -> new ArrayList<>()).add(new RehearsalPeers.Slot(p.rank(), p.cls(),
                    p.slot()));
        }
        Map<Integer, CompletableFuture<List<Sample>>> got = new HashMap<>();
        bySource.forEach((source, slots) -> got.put(source, source == 0
                ? CompletableFuture.completedFuture(jb.read(slots))
                : peers.fetch(where.get(source), job, slots).thenApply(list -> {
                    stats.fetched(list.stream().filter(java.util.Objects::nonNull).mapToLong(Sample::bytes).sum(), true);
                    return list;
                }).exceptionally(e -> {
                    LOG.warn("job={} rehearsal representatives of {} not fetched: {}", job, where.get(source),
                            e.toString());
                    return List.of();
                })));
        return CompletableFuture.allOf(got.values().toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<Sample> out = new ArrayList<>();
            got.values().forEach(f -> f.join().stream().filter(java.util.Objects::nonNull).forEach(out::add));
            return out;
        });
    }
}
