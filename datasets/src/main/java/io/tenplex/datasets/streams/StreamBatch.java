package io.tenplex.datasets.streams;

import java.util.List;

/**
 * A batch read from a rank's buffer: its samples' bytes (borrowed) and whether the rank's stream is
 * over; {@code unsent} (null for an empty batch) puts the samples back when the batch never reached
 * its reader; {@code taken} the samples themselves (ids and read counts, for a daemon that relays
 * the batch and may have to send it back).
 */
public record StreamBatch(List<byte[]> samples, boolean ended, Runnable unsent, List<Sample> taken) {
    public StreamBatch(List<byte[]> samples, boolean ended) {
        this(samples, ended, null, List.of());
    }
}
