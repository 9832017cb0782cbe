package io.tenplex.datasets;

import io.tenplex.ptc.data.MountParams;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A request to mount a job's dataset: where its index is (a path or URL the daemon reads, or the
 * index text itself), the mount parameters, the data-parallel ranks served here and the peers to
 * load samples from. Every size is checked against its limit before anything is allocated for it.
 *
 * @param index a path or URL of the index, or null when {@code indexText} is given
 * @param indexText the index itself, or null when {@code index} is given
 * @param ranks the ranks this daemon serves (distinct, below the data-parallel size); null: all
 * @param peers daemons ({@code host:port}) to load from before the source; null: the daemon's peers
 */
public record MountRequest(String index, String indexText, MountParams params, List<Integer> ranks,
        List<String> peers) {
    /** The largest data-parallel size a mount may have (the view has a directory per rank). */
    public static final int MAX_DP_SIZE = 1 << 16;

    public MountRequest {
        if (index == null && indexText == null) {
            throw new IllegalArgumentException("mount request needs 'index' (a path or URL) or 'indexText'");
        }
        if (params == null) {
            throw new IllegalArgumentException("mount request needs its parameters");
        }
        ranks = ranks == null ? null : distinctRanks(ranks, params.dpSize());
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

    /**
     * Mount parameters, the data-parallel size checked against {@link #MAX_DP_SIZE} first.
     *
     * @throws IllegalArgumentException naming the value and the limit
     */
    public static MountParams params(long progress, int globalBatch, int dpSize, long seed, boolean shuffle,
            int samplesPerFile) {
        checkDpSize(dpSize);
        try {
            return new MountParams(progress, globalBatch, dpSize, seed, shuffle, samplesPerFile);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad mount parameters: " + e.getMessage());
        }
    }

    /** A 400 naming the value and the limit if {@code dpSize} is over {@link #MAX_DP_SIZE}. */
    public static void checkDpSize(int dpSize) {
        if (dpSize > MAX_DP_SIZE) {
            throw new IllegalArgumentException("data-parallel size " + dpSize + " is over the limit " + MAX_DP_SIZE);
        }
    }

    /** The ranks served here: the ones asked for, or every rank. */
    List<Integer> servedRanks() {
        if (ranks != null) {
            return ranks;
        }
        List<Integer> all = new ArrayList<>(params.dpSize());
        for (int r = 0; r < params.dpSize(); r++) {
            all.add(r);
        }
        return all;
    }

    private static List<Integer> distinctRanks(List<Integer> ranks, int dp) {
        Set<Integer> seen = new LinkedHashSet<>();
        for (Integer r : ranks) {
            if (r == null || r < 0 || r >= dp) {
                throw new IllegalArgumentException("rank " + r + " outside the data-parallel size " + dp
                        + " (expected: 0 <= rank < " + dp + ")");
            }
            if (!seen.add(r)) {
                throw new IllegalArgumentException("rank " + r + " appears more than once in 'ranks'");
            }
        }
        return List.copyOf(seen);
    }
}
