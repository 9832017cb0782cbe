package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a job's streamed samples from its old ranks' buffers to its new ranks' buffers, with no
 * sample lost and none duplicated: (1) every old daemon freezes its buffers and hands over every
 * sample it holds (producers are told to push again, readers get empty batches); (2) every daemon
 * of the old or new ranks takes the new config with empty, frozen buffers; (3) the samples are dealt
 * round robin over the new ranks, unseen ones first (each keeps its read count, so a Reservoir's
 * seen samples stay seen), and sent to their daemons; (4) every daemon lets producers and readers
 * in again. The samples pass through the coordinator's heap. The producers' closes move from the old
 * rank 0's daemon to the new one (a close that reaches the old one while the new config is being
 * given out may be missed; an explicit end still ends production).
 */
final class Repartition {
    private static final Logger LOG = LoggerFactory.getLogger(Repartition.class);
    /** The most sample bytes one import message carries (a control body is at most 16 MiB). */
    static final long IMPORT_CHUNK_BYTES = 8L << 20;

    private final String job;
    private final StreamConfig old;
    private final StreamConfig next;
    private final StreamService local;
    private final StreamPeers peers;

    Repartition(String job, StreamConfig old, StreamConfig next, StreamService local, StreamPeers peers) {
        this.job = job;
        this.old = old;
        this.next = next;
        this.local = local;
        this.peers = peers;
    }

    void run() {
        List<Sample> unseen = new ArrayList<>();
        List<Sample> seen = new ArrayList<>();
        for (String d : old.daemons()) {
            Map<Integer, List<Sample>> byRank = local.isSelf(d) ? local.exportLocal(job) : peers.export(d, job);
            byRank.values().forEach(list -> list.forEach(s -> (s.reads() > 0 ? seen : unseen).add(s)));
        }
        String first = old.ranks().get(0);
        int closes = local.isSelf(first) ? local.config(job).closes() : peers.closes(first, job);
        StreamConfig taken = next.withCloses(closes); // counted on the old rank 0's daemon
        List<String> all = StreamService.union(old, next);
        for (String d : all) {
            if (local.isSelf(d)) {
                local.configure(job, taken, true);
            } else {
                peers.configure(d, job, taken, true);
            }
        }
        unseen.addAll(seen);
        Map<String, Map<Integer, List<Sample>>> byDaemon = deal(unseen);
        byDaemon.forEach(this::send);
        for (String d : all) {
            if (local.isSelf(d)) {
                local.unfreezeLocal(job);
            } else {
                peers.unfreeze(d, job);
            }
        }
        LOG.info("job={} stream re-partitioned from {} to {} ranks: {} unseen and {} seen samples moved", job,
                old.dp(), next.dp(), unseen.size() - seen.size(), seen.size());
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

    /** Sends a daemon its samples in messages of at most {@link #IMPORT_CHUNK_BYTES}. */
    private void send(String daemon, Map<Integer, List<Sample>> byRank) {
        if (local.isSelf(daemon)) {
            local.importLocal(job, byRank);
            return;
        }
        Map<Integer, List<Sample>> chunk = new TreeMap<>();
        long bytes = 0;
        for (Map.Entry<Integer, List<Sample>> e : byRank.entrySet()) {
            for (Sample s : e.getValue()) {
                if (bytes > 0 && bytes + s.data().length > IMPORT_CHUNK_BYTES) {
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
