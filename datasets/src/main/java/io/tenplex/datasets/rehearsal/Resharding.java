package io.tenplex.datasets.rehearsal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The coordinator of a re-partition (run by the daemon that handles the resource change): it reads
 * what every daemon holds, holding their updates off from then on (hold: updates are answered "retry
 * later" until the end), plans the new ranks ({@link Repartition}), has each daemon involved (holding
 * representatives or taking a new rank) gather its new ranks' representatives aside (prepare; none for
 * a daemon that takes no new rank), then switches them all at once (commit); when a step fails, every
 * daemon forgets what it gathered, updates go in again, and the buffer stays as it was.
 */
final class Resharding {
    /** What a re-partition did. */
    record Outcome(int daemons, int ranks, long representatives, long moved) {
    }

    /** This daemon's side of a re-partition (what the routes of the other daemons call there). */
    interface Participant {
        void prepare(String job, RehearsalPeers.Moves moves) throws Exception;

        void finish(String job, boolean commit);
    }

    private static final long TIMEOUT_SECONDS = 300;

    private final RehearsalPeers peers;
    private final String self;
    private final String selfAddress;
    private final Participant here;

    /** @param selfAddress this daemon's address as the others reach it */
    Resharding(RehearsalPeers peers, String self, String selfAddress, Participant here) {
        this.peers = peers;
        this.self = self;
        this.selfAddress = selfAddress;
        this.here = here;
    }

    /**
     * @param local this daemon's state of the job (null: none here)
     * @param targets new rank to the address of the daemon that will hold it
     * @param others the other daemons that may hold representatives of the job
     */
    Outcome run(String job, JobBuffer local, Map<Integer, String> targets, List<String> others) throws Exception {
        Set<String> addresses = new LinkedHashSet<>(others);
        addresses.addAll(targets.values());
        Map<String, String> ids = new LinkedHashMap<>(); // daemon id -> address
        Map<String, String> idOf = new LinkedHashMap<>(); // address -> daemon id
        ids.put(self, selfAddress);
        List<RehearsalPeers.Counts> held = new ArrayList<>();
        RehearsalConfig config = local == null ? null : local.config;
        List<String> asked = new ArrayList<>();
        try {
            if (local != null) {
                local.hold();
                held.add(new RehearsalPeers.Counts(self, config, local.counts()));
            }
            for (String a : addresses) {
                asked.add(a);
                RehearsalPeers.Counts c = await(peers.hold(a, job));
                idOf.put(a, c.daemon());
                if (c.daemon().equals(self)) {
                    ids.replace(self, selfAddress, a); // as the others know this daemon (their --peers come first)
                } else if (ids.putIfAbsent(c.daemon(), a) == null && c.config() != null) {
                    held.add(c);
                    config = config == null ? c.config() : config;
                }
            }
            if (config == null) {
                release(job, asked);
                return new Outcome(0, 0, 0, 0); // no daemon has a rehearsal buffer of the job
            }
            return apply(job, config, plan(held, ids, idOf, targets, config), ids, held);
        } catch (Exception e) {
            release(job, asked);
            throw e;
        }
    }

    /** Lets updates in again everywhere a failed re-partition held them off (an abort; best effort). */
    private void release(String job, List<String> asked) {
        for (String a : asked) {
            peers.finish(a, job, false);
        }
        here.finish(job, false);
    }

    private record Planned(Repartition.Plan plan, List<String> sources, Map<Integer, Integer> targets) {
    }

    private static Planned plan(List<RehearsalPeers.Counts> held, Map<String, String> ids, Map<String, String> idOf,
            Map<Integer, String> targets, RehearsalConfig config) {
        List<String> sources = new ArrayList<>(ids.keySet());
        List<GlobalSampler.Holding> holdings = new ArrayList<>();
        for (RehearsalPeers.Counts c : held) {
            int s = sources.indexOf(c.daemon());
            c.ranks().forEach((rank, counts) -> holdings.add(new GlobalSampler.Holding(s, rank, counts)));
        }
        Map<Integer, Integer> to = new TreeMap<>();
        targets.forEach((rank, address) -> to.put(rank, sources.indexOf(idOf.get(address))));
        Repartition.Plan plan = Repartition.plan(holdings, to, config.perClass(), new Random(config.seed()));
        return new Planned(plan, sources, to);
    }

    private Outcome apply(String job, RehearsalConfig config, Planned p, Map<String, String> ids,
            List<RehearsalPeers.Counts> held) throws Exception {
        Map<String, String> addressOf = new LinkedHashMap<>(ids);
        Map<Integer, Map<Integer, List<RehearsalPeers.Ref>>> bySource = new TreeMap<>();
        held.forEach(c -> bySource.put(p.sources().indexOf(c.daemon()), new TreeMap<>())); // they give up theirs
        long total = 0;
        for (var e : p.plan().ranks().entrySet()) {
            List<RehearsalPeers.Ref> refs = new ArrayList<>();
            for (GlobalSampler.Pick k : e.getValue()) {
                refs.add(new RehearsalPeers.Ref(p.sources().get(k.source()),
                        new RehearsalPeers.Slot(k.rank(), k.cls(), k.slot())));
            }
            total += refs.size();
            bySource.computeIfAbsent(p.targets().get(e.getKey()), s -> new TreeMap<>()).put(e.getKey(), refs);
        }
        List<String> involved = new ArrayList<>();
        bySource.keySet().forEach(s -> involved.add(p.sources().get(s)));
        try {
            for (var e : bySource.entrySet()) {
                RehearsalPeers.Moves moves = new RehearsalPeers.Moves(config, addressOf, e.getValue());
                String id = p.sources().get(e.getKey());
                if (id.equals(self)) {
                    here.prepare(job, moves);
                } else {
                    await(peers.prepare(ids.get(id), job, moves));
                }
            }
        } catch (Exception e) {
            finishAll(job, involved, ids, false);
            throw e;
        }
        finishAll(job, involved, ids, true);
        return new Outcome(involved.size(), p.targets().size(), total, p.plan().moved(p.targets()));
    }

    private void finishAll(String job, List<String> involved, Map<String, String> ids, boolean commit)
            throws Exception {
        List<CompletableFuture<Void>> done = new ArrayList<>();
        for (String id : involved) {
            if (!id.equals(self)) {
                done.add(peers.finish(ids.get(id), job, commit));
            }
        }
        if (involved.contains(self)) {
            here.finish(job, commit);
        }
        await(CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)));
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        try {
            return f.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception x ? x : e;
        } catch (TimeoutException e) {
            throw new IllegalStateException("a daemon did not answer within " + TIMEOUT_SECONDS + " s", e);
        }
    }
}
