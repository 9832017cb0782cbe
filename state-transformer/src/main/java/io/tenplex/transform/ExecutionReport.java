package io.tenplex.transform;

/**
 * What executing (part of) a plan did: shards assembled and kept, bytes read from the destination's
 * own worker and from other workers, pieces re-read after a failed or corrupted transfer, and time;
 * {@code aliased} shards (and their bytes) shared another new shard's bytes on the same worker (a
 * data-parallel replica assembled once), so nothing was read or written for them; of those bytes,
 * {@code aliasedRemoteBytes} the plan would have fetched from other workers.
 */
public record ExecutionReport(int shards, int kept, long localBytes, long remoteBytes, int retries, int corrupted,
        long nanos, int aliased, long aliasedBytes, long aliasedRemoteBytes) {
    @Override
    public String toString() {
        return shards + " shards (" + kept + " kept in place, " + aliased + " sharing a replica's "
                + Bytes.human(aliasedBytes) + "), " + Bytes.human(localBytes) + " from this worker, "
                + Bytes.human(remoteBytes) + " from others, " + retries + " retries (" + corrupted
                + " corrupted transfers), " + String.format(java.util.Locale.ROOT, "%.3f s", nanos / 1e9);
    }
}
