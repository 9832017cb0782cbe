package io.tenplex.datasets;

/**
 * How far a mount has loaded its samples, and how long reads waited for them.
 *
 * @param state {@code loading}, {@code loaded}, or {@code failed}: loading ended with samples its
 *     source cannot produce (a corrupt chunk), whose reads fail
 * @param fromPreviousMount samples copied from the job's previous mount on this daemon
 * @param firstBatchReadyMillis mount to the first global batch of every local rank in memory; null before
 * @param loadedMillis mount to every sample in memory; null before
 * @param error the last source error while it is being retried, or why samples were given up, or null
 */
public record LoadStatus(String state, long samplesLoaded, long samplesTotal, long bytesLoaded, long bytesTotal,
        long fromPreviousMount, long fromPeers, long fromSource, Double firstBatchReadyMillis, Double loadedMillis,
        long readsThatWaited, double readWaitMillis, double longestReadWaitMillis, String error) {
}
