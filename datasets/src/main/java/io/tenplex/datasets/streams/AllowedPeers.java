package io.tenplex.datasets.streams;

import io.tenplex.datasets.SourcePolicy;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/** The daemons a stream request may name: the daemon's own peers, or daemons on allowed source hosts. */
final class AllowedPeers implements Predicate<String> {
    static final String WHY = "neither one of this daemon's --peers nor on an allowed source host (tenplexd "
            + "--allow-source-host HOST[:PORT])";

    private final Set<String> peers;
    private final SourcePolicy policy;

    AllowedPeers(List<String> peers, SourcePolicy policy) {
        this.peers = Set.copyOf(peers);
        this.policy = policy;
    }

    /**
     * Checks that every daemon is this one ({@code self}) or {@code allowed}; a malformed address is
     * a 400 first.
     *
     * @throws io.tenplex.store.StoreException {@code FORBIDDEN} naming the first that is neither
     */
    static void check(List<String> daemons, Predicate<String> self, Predicate<String> allowed) {
        for (String d : daemons) {
            StreamConfig.checkAddress(d);
            if (!self.test(d) && !allowed.test(d)) {
                throw new io.tenplex.store.StoreException(io.tenplex.store.StoreException.Kind.FORBIDDEN, "daemon '" + d
                        + "' is " + WHY);
            }
        }
    }

    /** Whether {@code host:port} (already checked well formed) is allowed. */
    @Override
    public boolean test(String a) {
        if (peers.contains(a)) {
            return true;
        }
        int colon = a.lastIndexOf(':');
        String host = a.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return policy.allowsHost(host, Integer.parseInt(a.substring(colon + 1)));
    }
}
