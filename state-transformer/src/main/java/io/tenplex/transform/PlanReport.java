package io.tenplex.transform;

import java.util.Map;

/**
 * What a plan costs: bytes copied on one device (splits), moved between devices of one worker,
 * moved between workers, the lower bound on cross-worker bytes for this pair of PTCs, and per
 * worker the cross-worker bytes it sends and receives.
 */
public record PlanReport(long onDevice, long intraWorker, long interWorker, long lowerBound, long kept,
        Map<Integer, Long> sentByWorker, Map<Integer, Long> receivedByWorker) {

    /** The largest number of bytes one worker sends to others. */
    public long maxSent() {
        return sentByWorker.values().stream().mapToLong(Long::longValue).max().orElse(0);
    }

    @Override
    public String toString() {
        return "on-device " + Bytes.human(onDevice) + ", intra-worker " + Bytes.human(intraWorker) + ", inter-worker "
                + Bytes.human(interWorker) + " (lower bound " + Bytes.human(lowerBound) + "), kept in place "
                + Bytes.human(kept) + ", most sent by one worker " + Bytes.human(maxSent());
    }
}
