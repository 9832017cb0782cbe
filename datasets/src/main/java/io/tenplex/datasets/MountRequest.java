package io.tenplex.datasets;

import io.tenplex.ptc.data.MountParams;
import java.util.List;

/**
 * A request to mount a job's dataset: where its index is (a path or URL the daemon reads, or the
 * index text itself), the mount parameters ({@link MountChecks#params} checks their limits), the
 * data-parallel ranks served here and the peers to load samples from.
 *
 * @param index a path or URL of the index, or null when {@code indexText} is given
 * @param indexText the index itself, or null when {@code index} is given
 * @param ranks the ranks this daemon serves (distinct, below the data-parallel size); null: all
 * @param peers daemons ({@code host:port}) to load from before the source; null: the daemon's peers
 */
public record MountRequest(String index, String indexText, MountParams params, List<Integer> ranks,
        List<String> peers) {
    public MountRequest {
        if (index == null && indexText == null) {
            throw new IllegalArgumentException("mount request needs 'index' (a path or URL) or 'indexText'");
        }
        if (params == null) {
            throw new IllegalArgumentException("mount request needs its parameters");
        }
        ranks = ranks == null ? null : MountChecks.distinctRanks(ranks, params.dpSize());
        peers = peers == null ? null : List.copyOf(peers);
    }

    /** A mount of an index given as text, serving every rank and loading from the daemon's peers. */
    public static MountRequest inline(String indexText, MountParams params) {
        return new MountRequest(null, indexText, params, null, null);
    }

    /** A mount of the index at a path or URL, serving every rank and loading from the daemon's peers. */
    public static MountRequest at(String index, MountParams params) {
        return new MountRequest(index, null, params, null, null);
    }

    public MountRequest withRanks(List<Integer> r) {
        return new MountRequest(index, indexText, params, r, peers);
    }

    public MountRequest withPeers(List<String> p) {
        return new MountRequest(index, indexText, params, ranks, p);
    }

    /** The ranks served here: the ones asked for, or every rank. */
    List<Integer> servedRanks() {
        return ranks != null ? ranks : MountChecks.allRanks(params.dpSize());
    }
}
