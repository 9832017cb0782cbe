package io.tenplex.datasets.streams;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Peers that are other {@link StreamService}s in this JVM, by address (the fake at the wire's edge). */
final class InMemoryStreamPeers implements StreamPeers {
    final Map<String, StreamService> daemons = new HashMap<>();

    private StreamService at(String peer) {
        StreamService s = daemons.get(peer);
        if (s == null) {
            throw new IllegalStateException("no daemon at " + peer);
        }
        return s;
    }

    @Override
    public void configure(String peer, String job, StreamConfig config, boolean frozen) {
        at(peer).configure(job, config, frozen);
    }

    @Override
    public Map<Integer, List<Sample>> export(String peer, String job) {
        return at(peer).exportLocal(job);
    }

    @Override
    public void importSamples(String peer, String job, Map<Integer, List<Sample>> byRank) {
        at(peer).importLocal(job, byRank);
    }

    @Override
    public int closes(String peer, String job) {
        return at(peer).config(job).closes();
    }

    @Override
    public void unfreeze(String peer, String job) {
        at(peer).unfreezeLocal(job);
    }

    @Override
    public void end(String peer, String job) {
        at(peer).endLocal(job);
    }

    @Override
    public void delete(String peer, String job) {
        at(peer).deleteLocal(job);
    }
}
