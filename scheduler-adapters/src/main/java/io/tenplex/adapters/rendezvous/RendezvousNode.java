package io.tenplex.adapters.rendezvous;

/** A torchrun node (one agent) of a job's rendezvous: what it said when it joined, and when it was last heard. */
final class RendezvousNode {
    final String id;
    final long arrived;
    int nproc;
    String daemon;
    long seen;
    /** The round it asked to be in (0: none: it is in the current round, or it has not asked). */
    int waitsFor;

    RendezvousNode(String id, long now) {
        this.id = id;
        this.arrived = now;
        this.seen = now;
    }
}
