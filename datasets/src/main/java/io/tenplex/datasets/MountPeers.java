package io.tenplex.datasets;

import io.tenplex.store.StoreException;
import java.util.List;

/** Which peers a mount may load samples from: the daemon's own peers, or daemons on allowed source hosts. */
final class MountPeers {
    private MountPeers() {}

    /**
     * The peers of a mount request: {@code requested}, each one of {@code defaults} or on a host the
     * policy allows; {@code defaults} when none were named.
     *
     * @throws StoreException {@code FORBIDDEN} for a peer that is neither
     * @throws IllegalArgumentException for a peer that is not {@code host:port}
     */
    static List<String> resolve(List<String> requested, List<String> defaults, SourcePolicy policy) {
        if (requested == null) {
            return defaults;
        }
        for (String peer : requested) {
            if (!defaults.contains(peer) && !allowed(peer, policy)) {
                throw new StoreException(StoreException.Kind.FORBIDDEN, "peer '" + peer + "' is neither one of this "
                        + "daemon's --peers nor an allowed source host; " + SourcePolicy.HOW_HOSTS);
            }
        }
        return requested;
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
}
