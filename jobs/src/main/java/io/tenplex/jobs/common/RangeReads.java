package io.tenplex.jobs.common;

import io.tenplex.ptc.Region;
import io.tenplex.store.StorePath;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * The data plane between daemons: reads a region of a tensor held by another daemon into a buffer.
 * The server module implements it with pooled range GETs; tests with in-process stores.
 */
public interface RangeReads {
    /**
     * Reads {@code region} of the tensor at {@code path} on {@code daemon} into {@code dst} (borrowed:
     * filled from its position), paced as the executor asks ({@code pace}, see
     * {@link io.tenplex.transform.ShardSource}; 0: as fast as the link goes).
     *
     * @return completes with the holder's CRC32C of the bytes sent (empty when it sent none); fails
     *     with a {@link io.tenplex.transform.CorruptTransferException} when a checksum was asked for and
     *     not sent, or an {@link java.io.IOException}
     */
    CompletableFuture<OptionalInt> readRegion(InetSocketAddress daemon, StorePath path, Region region, ByteBuffer dst,
            long pace);
}
