package io.tenplex.jobs.common;

/**
 * What a daemon's part of a plan reports: its state ({@code executing}, {@code prepared},
 * {@code failed}, {@code committed}, {@code aborted}), the failure's reason (empty when none), its
 * progress and, once executed, its transfer report and {@code slowMemory}: why its new shards took slower
 * memory than recycled shared memory (null when they did not).
 */
public record PartStatus(String planId, String state, String error, long bytesTotal, long bytesDone, long localBytes,
        long remoteBytes, int retries, int corrupted, long executeNanos, String slowMemory) {

    public PartStatus {
        error = error == null ? "" : error;
        slowMemory = slowMemory == null || slowMemory.isEmpty() ? null : slowMemory;
    }
}
