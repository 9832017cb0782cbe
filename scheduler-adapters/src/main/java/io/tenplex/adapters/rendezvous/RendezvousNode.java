package io.tenplex.adapters.rendezvous;

/** A torchrun node (one agent) of a job's rendezvous: what it said when it joined, and when it was last heard. */
final class RendezvousNode {
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    final String id;
    final long arrived;
    /** What the node's later calls carry: its first join answered it, and nobody else learns it. */
    final String secret;
    int nproc;
    String daemon;
    long seen;
    /** The round it asked to be in (0: none: it is in the current round, or it has not asked). */
    int waitsFor;
    /** The last round it was a member of (0: none), and its rank there. */
    int memberOf;
    int rank;

    RendezvousNode(String id, long now) {
        this.id = id;
        this.arrived = now;
        this.seen = now;
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        this.secret = java.util.HexFormat.of().formatHex(b);
    }

    /** Whether {@code s} is the node's secret (compared in constant time). */
    boolean is(String s) {
        return s != null && java.security.MessageDigest.isEqual(secret.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
}
