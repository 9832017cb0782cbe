package io.tenplex.datasets.streams;

import java.util.Map;

/**
 * One rank's training buffer, now.
 *
 * @param population samples held ({@code seen + unseen})
 * @param pushed samples accepted since the buffer was made (re-partitioned ones included)
 * @param delivered samples put into batches (a Reservoir sample counts once per batch)
 * @param evicted seen samples a Reservoir evicted to make room
 * @param refused pushes answered "full" after their wait (the producer retries; nothing dropped)
 * @param withdrawn waiting pushes and reads whose caller went away (connection closed): nothing stored or taken
 * @param readsHeld how many batches the held samples were in (bucket to count)
 * @param readsLeft the same for samples that left the buffer (read for good or evicted)
 */
public record RankStatus(int rank, String policy, int capacity, int threshold, int population, int seen, int unseen,
        long pushed, long delivered, long batches, long evicted, long refused, long withdrawn, int waitingProducers,
        int waitingReaders, boolean receptionOver, boolean drained, boolean frozen, Map<String, Long> readsHeld,
        Map<String, Long> readsLeft) {
}
