package io.tenplex.datasets.streams;

import java.util.List;

/**
 * A job's stream as every daemon of it knows it: the spec, the daemon ({@code host:port}) of each
 * data-parallel rank (index = rank), other daemons that producers and trainers may call (they relay
 * to the ranks' daemons), the producers' closes counted so far and whether production has ended.
 */
public record StreamConfig(StreamSpec spec, List<String> ranks, List<String> others, int closes, boolean ended) {
    /** The most data-parallel ranks a stream spreads over. */
    public static final int MAX_RANKS = 4096;

    public StreamConfig {
        if (spec == null) {
            throw new IllegalArgumentException("a stream config needs a spec");
        }
        if (ranks == null || ranks.isEmpty() || ranks.size() > MAX_RANKS) {
            throw new IllegalArgumentException("ranks " + (ranks == null ? 0 : ranks.size())
                    + " (expected: 1 to " + MAX_RANKS + " daemon addresses, one per data-parallel rank)");
        }
        for (String r : ranks) {
            if (r == null || r.lastIndexOf(':') <= 0) {
                throw new IllegalArgumentException("rank address '" + r + "' (expected: host:port)");
            }
        }
        ranks = List.copyOf(ranks);
        others = others == null ? List.of() : List.copyOf(others);
        if (others.size() > MAX_RANKS) {
            throw new IllegalArgumentException("other daemons " + others.size() + " (expected: at most " + MAX_RANKS
                    + ")");
        }
        if (closes < 0) {
            throw new IllegalArgumentException("closes " + closes + " (expected: >= 0)");
        }
    }

    public int dp() {
        return ranks.size();
    }

    /** The daemons of the ranks, each once, in rank order, then the others. */
    public List<String> daemons() {
        return java.util.stream.Stream.concat(ranks.stream(), others.stream()).distinct().toList();
    }

    StreamConfig withRanks(List<String> newRanks) {
        return new StreamConfig(spec, newRanks, others, closes, ended);
    }

    StreamConfig withCloses(int n) {
        return new StreamConfig(spec, ranks, others, n, ended);
    }

    StreamConfig asEnded() {
        return new StreamConfig(spec, ranks, others, closes, true);
    }
}
