package io.tenplex.datasets.streams;

import java.util.List;

/**
 * What a rank's buffer has done so far, for its status: samples pushed (moved in counted too),
 * put in batches, batches, evicted, pushes refused (answered full) and waits withdrawn, and the read
 * counts of the samples that left it. Guarded by the buffer's lock.
 */
final class RankCounts {
    long pushed;
    long delivered;
    long batches;
    long evicted;
    long refused;
    long withdrawn;
    /** The read counts of the samples that left the buffer. */
    final ReadCounts left = new ReadCounts();

    /** A batch handed out ({@code n > 0}), or taken back ({@code n < 0}). */
    void batch(int n) {
        delivered += n;
        batches += Integer.signum(n);
    }

    RankStatus status(int rank, StreamSpec spec, TrainingBuffer buf, int waitingPuts, int waitingReads, boolean frozen) {
        List<Sample> held = buf.held();
        return new RankStatus(rank, spec.policy().wireName(), spec.capacity(), spec.threshold(), held.size(),
                held.size() - buf.unseen(), buf.unseen(), pushed, delivered, batches, evicted, refused, withdrawn,
                waitingPuts, waitingReads, buf.receptionOver(), buf.drained(), frozen, ReadCounts.of(held).toMap(),
                left.toMap());
    }
}
