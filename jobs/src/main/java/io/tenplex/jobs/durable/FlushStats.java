package io.tenplex.jobs.durable;

import java.util.Locale;

/**
 * What one flush did: {@code logicalBytes} of the generation's ranks here, of which it wrote
 * {@code bytesWritten} ({@code blocksWritten} blocks) and referred to {@code blocksReused} blocks
 * already on disk.
 */
public record FlushStats(String job, long step, long logicalBytes, long bytesWritten, long blocksWritten,
        long blocksReused, long millis) {

    /** The share of the logical bytes written, 0 to 1 (1 for an empty generation). */
    public double writtenShare() {
        return logicalBytes == 0 ? 1.0 : bytesWritten / (double) logicalBytes;
    }

    /** The counts by name, for a generation's status. */
    public java.util.Map<String, Long> asMap() {
        return java.util.Map.of("logicalBytes", logicalBytes, "bytesWritten", bytesWritten, "blocksWritten",
                blocksWritten, "blocksReused", blocksReused, "millis", millis);
    }

    /** One log line in the fixed vocabulary. */
    public String describe() {
        return String.format(Locale.ROOT, "job=%s step=%d bytes=%d logicalBytes=%d written=%.1f%% blocks=%d reused=%d "
                + "ms=%d", job, step, bytesWritten, logicalBytes, 100 * writtenShare(), blocksWritten, blocksReused,
                millis);
    }
}
