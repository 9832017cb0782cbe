package io.tenplex.transform;

/**
 * What executing (part of) a plan did: shards assembled and kept, bytes read from the destination's
 * own worker and from other workers, pieces re-read after a failed or corrupted transfer, and time.
 */
public record ExecutionReport(int shards, int kept, long localBytes, long remoteBytes, int retries, int corrupted,
        long nanos) {
    @Override
    public String toString() {
        return shards + " shards (" + kept + " kept in place), " + Bytes.human(localBytes) + " from this worker, "
                + Bytes.human(remoteBytes) + " from others, " + retries + " retries (" + corrupted
                + " corrupted transfers), " + String.format(java.util.Locale.ROOT, "%.3f s", nanos / 1e9);
    }
}
