package io.tenplex.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The validated fields of a mount request other than its index: the mount parameters, the ranks
 * served here (distinct, within the data-parallel size) and the peers to load from (the daemon's
 * peers or allowed source hosts). Every size is checked against its limit before anything is
 * allocated for it.
 */
record MountRequest(MountParams params, List<Integer> ranks, List<String> peers) {
    /** The largest data-parallel size a mount may have (the view has a directory per rank). */
    static final int MAX_DP_SIZE = 1 << 16;

    static MountRequest parse(JsonNode b, List<String> defaultPeers, SourcePolicy policy) {
        int dp = need(b, "dpSize");
        if (dp > MAX_DP_SIZE) {
            throw new IllegalArgumentException("data-parallel size " + dp + " is over the limit " + MAX_DP_SIZE);
        }
        MountParams params;
        try {
            params = new MountParams(optLong(b, "progress", 0), need(b, "globalBatch"), dp, optLong(b, "seed", 0),
                    b.path("shuffle").asBoolean(true), optInt(b, "samplesPerFile", 1024));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad mount parameters: " + e.getMessage());
        }
        return new MountRequest(params, ranks(b, dp), peers(b, defaultPeers, policy));
    }

    private static List<Integer> ranks(JsonNode b, int dp) {
        if (!b.has("ranks")) {
            List<Integer> all = new ArrayList<>(dp);
            for (int r = 0; r < dp; r++) {
                all.add(r);
            }
            return all;
        }
        if (!b.get("ranks").isArray()) {
            throw new IllegalArgumentException("'ranks' must be an array of ranks");
        }
        Set<Integer> ranks = new LinkedHashSet<>();
        for (JsonNode n : b.get("ranks")) {
            if (!n.canConvertToInt() || n.asInt() < 0 || n.asInt() >= dp) {
                throw new IllegalArgumentException("rank " + n + " outside the data-parallel size " + dp
                        + " (expected: 0 <= rank < " + dp + ")");
            }
            if (!ranks.add(n.asInt())) {
                throw new IllegalArgumentException("rank " + n.asInt() + " appears more than once in 'ranks'");
            }
        }
        return List.copyOf(ranks);
    }

    private static List<String> peers(JsonNode b, List<String> defaultPeers, SourcePolicy policy) {
        if (!b.has("peers")) {
            return defaultPeers;
        }
        if (!b.get("peers").isArray()) {
            throw new IllegalArgumentException("'peers' must be an array of \"host:port\"");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode n : b.get("peers")) {
            String peer = n.asText();
            if (!defaultPeers.contains(peer) && !allowed(peer, policy)) {
                throw new StoreException(StoreException.Kind.FORBIDDEN, "peer '" + peer + "' is neither one of this "
                        + "daemon's --peers nor an allowed source host; " + SourcePolicy.HOW_HOSTS);
            }
            out.add(peer);
        }
        return out;
    }

    private static boolean allowed(String peer, SourcePolicy policy) {
        int colon = peer.lastIndexOf(':');
        if (colon <= 0 || peer.chars().anyMatch(c -> c == '/' || c == '@' || c == '?' || c == '#'
                || Character.isWhitespace(c))) {
            throw new IllegalArgumentException("peer '" + peer + "' is not host:port");
        }
        try {
            int port = Integer.parseInt(peer.substring(colon + 1));
            return port > 0 && port < 65536 && policy.allowsHost(peer.substring(0, colon), port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("peer '" + peer + "' is not host:port");
        }
    }

    private static int need(JsonNode b, String field) {
        if (!b.path(field).canConvertToInt() || !b.get(field).isIntegralNumber()) {
            throw new IllegalArgumentException("mount request needs an integer '" + field + "' (at most "
                    + Integer.MAX_VALUE + ")");
        }
        return b.get(field).asInt();
    }

    private static int optInt(JsonNode b, String field, int dflt) {
        return b.has(field) ? need(b, field) : dflt;
    }

    private static long optLong(JsonNode b, String field, long dflt) {
        if (!b.has(field)) {
            return dflt;
        }
        if (!b.get(field).isIntegralNumber() || !b.get(field).canConvertToLong()) {
            throw new IllegalArgumentException("'" + field + "' must be an integer (at most " + Long.MAX_VALUE + ")");
        }
        return b.get(field).asLong();
    }
}
