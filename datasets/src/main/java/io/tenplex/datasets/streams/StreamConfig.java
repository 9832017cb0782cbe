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
        ranks.forEach(StreamConfig::checkAddress);
        ranks = List.copyOf(ranks);
        if (others != null) {
            others.forEach(StreamConfig::checkAddress);
        }
        others = others == null ? List.of() : List.copyOf(others);
        if (others.size() > MAX_RANKS) {
            throw new IllegalArgumentException("other daemons " + others.size() + " (expected: at most " + MAX_RANKS
                    + ")");
        }
        if (closes < 0) {
            throw new IllegalArgumentException("closes " + closes + " (expected: >= 0)");
        }
    }

    /** A daemon's address: {@code host:port}, the port 1..65535, the host without spaces or URL characters. */
    static void checkAddress(String a) {
        int colon = a == null ? -1 : a.lastIndexOf(':');
        boolean ok = colon > 0 && a.chars().noneMatch(c -> c == '/' || c == '@' || c == '?' || c == '#' || c == '%'
                || c == '\\' || Character.isWhitespace(c) || Character.isISOControl(c));
        if (ok) {
            String port = a.substring(colon + 1);
            ok = port.length() > 0 && port.length() <= 5 && port.chars().allMatch(c -> c >= '0' && c <= '9')
                    && Integer.parseInt(port) >= 1 && Integer.parseInt(port) <= 65535;
        }
        if (!ok) {
            throw new IllegalArgumentException("daemon address '" + a + "' (expected: host:port, port 1..65535)");
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
