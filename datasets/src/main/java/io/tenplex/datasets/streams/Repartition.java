package io.tenplex.datasets.streams;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a job's streamed samples from its old ranks' buffers to its new ranks' buffers, with no
 * sample lost and none duplicated: (0) every new daemon must answer, else nothing changes; (1) every
 * old daemon, in the order of their addresses, freezes its buffers and hands over every sample it
 * holds in bounded pages (producers are told to push again, readers get empty batches); a daemon
 * already frozen by another re-partitioning refuses (a conflict), so of two racing one wins; (2)
 * every daemon of the old or new ranks takes the new config with empty, frozen buffers; (3) the
 * samples are dealt round robin over the new ranks, unseen ones first (each keeps its read count,
 * so a Reservoir's seen samples stay seen), and sent to their daemons; (4) every daemon lets
 * producers and readers in again. When a step of (1) to (3) fails, the old config is put back, every
 * sample goes back to the daemon it came from and the buffers unfreeze; the failure is answered. The
 * samples pass through the coordinator's heap. The producers' closes move from the old rank 0's
 * daemon to the new one (a close that reaches the old one while the new config is being given out
 * may be missed; an explicit end still ends production).
 */
final class Repartition {
    private static final Logger LOG = LoggerFactory.getLogger(Repartition.class);

    private final String job;
    private final StreamConfig old;
    private final StreamConfig next;
    private final StreamService local;
    private final StreamPeers peers;
    private final List<String> all;
    /** Samples taken out so far, by the daemon they came from (a daemon here is frozen by this one). */
    private final Map<String, Map<Integer, List<Sample>>> exported = new LinkedHashMap<>();
    /** Daemons that took a config of this re-partitioning. */
    private final Set<String> configured = new LinkedHashSet<>();

    Repartition(String job, StreamConfig old, StreamConfig next, StreamService local, StreamPeers peers) {
        this.job = job;
        this.old = old;
        this.next = next;
        this.local = local;
        this.peers = peers;
        this.all = union(old, next);
    }

    /** Every daemon of two configs, each once (old ones first). */
    static List<String> union(StreamConfig a, StreamConfig b) {
        Set<String> all = new LinkedHashSet<>(a.daemons());
        all.addAll(b.daemons());
        return List.copyOf(all);
    }

    void run() {
        for (String d : next.daemons()) { // (0): before anything changes
            if (!old.daemons().contains(d) && !local.isSelf(d)) {
                peers.ping(d);
            }
        }
        int moved;
        try {
            for (String d : old.daemons().stream().sorted().toList()) {
                try {
                    export(d);
                } catch (StoreException e) {
                    if (e.kind() == StoreException.Kind.NOT_FOUND) { // nothing frozen there: another one moves it
                        throw StoreException.conflict("job " + job + "'s stream is not at " + d + " (re-partitioned "
                                + "meanwhile?): " + e.getMessage());
                    }
                    if (e.kind() != StoreException.Kind.CONFLICT) { // it may be frozen: unfreezing gives its samples back
                        exported.putIfAbsent(d, new TreeMap<>());
                    }
                    throw e;
                }
            }
            moved = move();
        } catch (RuntimeException e) {
            throw rollBack(e);
        }
        List<String> failed = new ArrayList<>();
        for (String d : all) {
            step(d, failed, () -> unfreeze(d));
        }
        if (!failed.isEmpty()) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "job " + job + "'s samples moved to the new "
                    + "ranks, but these daemons could not be unfrozen: " + failed);
        }
        LOG.info("job={} stream re-partitioned from {} to {} ranks: {} samples moved", job, old.dp(), next.dp(), moved);
    }

    private void export(String d) {
        java.util.function.Consumer<Map<Integer, List<Sample>>> page = p -> {
            Map<Integer, List<Sample>> into = exported.computeIfAbsent(d, x -> new TreeMap<>()); // d is frozen
            p.forEach((rank, list) -> into.computeIfAbsent(rank, r -> new ArrayList<>()).addAll(list));
        };
        if (local.isSelf(d)) {
            local.exportAll(job, old.ranks(), page);
        } else {
            peers.export(d, job, old.ranks(), page);
        }
    }

    /** Steps (2) and (3); answers how many samples moved. */
    private int move() {
        String first = old.ranks().get(0);
        int closes = local.isSelf(first) ? local.config(job).closes() : peers.closes(first, job);
        StreamConfig taken = next.withCloses(closes); // counted on the old rank 0's daemon
        for (String d : all) {
            configure(d, taken);
        }
        List<Sample> unseen = new ArrayList<>();
        List<Sample> seen = new ArrayList<>();
        exported.values().forEach(m -> m.values().forEach(list -> list.forEach(s -> (s.reads() > 0 ? seen : unseen)
                .add(s))));
        unseen.addAll(seen);
        deal(unseen).forEach(this::send);
        return unseen.size();
    }

    private void configure(String d, StreamConfig c) {
        if (local.isSelf(d)) {
            local.configure(job, c, true);
        } else {
            peers.configure(d, job, c, true);
        }
        configured.add(d);
    }

    private void unfreeze(String d) {
        if (local.isSelf(d)) {
            local.unfreezeLocal(job);
        } else {
            peers.unfreeze(d, job);
        }
    }

    /**
     * Puts the old config back where the new one was given, every sample back where it came from,
     * and unfreezes; answers the failure to throw, naming what could not be put back.
     */
    private StoreException rollBack(RuntimeException cause) {
        List<String> failed = new ArrayList<>();
        for (String d : List.copyOf(configured)) {
            step(d, failed, () -> {
                if (old.daemons().contains(d)) {
                    configure(d, old);
                } else {
                    local.forget(d, job);
                }
            });
        }
        long lost = 0;
        for (Map.Entry<String, Map<Integer, List<Sample>>> e : exported.entrySet()) {
            if (!step(e.getKey(), failed, () -> send(e.getKey(), e.getValue()))) {
                lost += e.getValue().values().stream().mapToLong(List::size).sum();
            }
        }
        for (String d : exported.keySet()) {
            step(d, failed, () -> unfreeze(d));
        }
        String what = failed.isEmpty() ? "the old ranks were restored with every sample"
                : "could not restore " + failed + (lost > 0 ? "; " + lost + " samples lost" : "");
        LOG.warn("job={} stream re-partition failed: {}; {}", job, cause.getMessage(), what);
        StoreException.Kind kind = cause instanceof StoreException s && s.kind() == StoreException.Kind.CONFLICT
                ? StoreException.Kind.CONFLICT : cause instanceof IllegalArgumentException
                        ? StoreException.Kind.BAD_REQUEST : StoreException.Kind.BAD_GATEWAY;
        return new StoreException(kind, "re-partition of job " + job + "'s stream failed: " + cause.getMessage()
                + "; " + what);
    }

    /** Runs a step at a daemon; a failure is noted, not thrown. */
    private static boolean step(String d, List<String> failed, Runnable r) {
        try {
            r.run();
            return true;
        } catch (RuntimeException e) {
            failed.add(d + " (" + e.getMessage() + ")");
            return false;
        }
    }

    /** Samples dealt round robin over the new ranks, grouped by the daemon that holds each rank. */
    private Map<String, Map<Integer, List<Sample>>> deal(List<Sample> samples) {
        Map<String, Map<Integer, List<Sample>>> out = new HashMap<>();
        for (int i = 0; i < samples.size(); i++) {
            int rank = i % next.dp();
            out.computeIfAbsent(next.ranks().get(rank), d -> new TreeMap<>())
                    .computeIfAbsent(rank, r -> new ArrayList<>()).add(samples.get(i));
        }
        return out;
    }

    /** Sends a daemon its samples in messages of at most {@link StreamService#MESSAGE_BYTES}. */
    private void send(String daemon, Map<Integer, List<Sample>> byRank) {
        if (local.isSelf(daemon)) {
            local.importLocal(job, byRank);
            return;
        }
        Map<Integer, List<Sample>> chunk = new TreeMap<>();
        long bytes = 0;
        for (Map.Entry<Integer, List<Sample>> e : byRank.entrySet()) {
            for (Sample s : e.getValue()) {
                if (bytes > 0 && bytes + s.data().length > StreamService.MESSAGE_BYTES) {
                    peers.importSamples(daemon, job, chunk);
                    chunk = new TreeMap<>();
                    bytes = 0;
                }
                chunk.computeIfAbsent(e.getKey(), r -> new ArrayList<>()).add(s);
                bytes += s.data().length + 20;
            }
        }
        if (!chunk.isEmpty()) {
            peers.importSamples(daemon, job, chunk);
        }
    }
}
