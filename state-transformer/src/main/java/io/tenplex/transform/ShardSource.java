package io.tenplex.transform;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Region;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/**
 * Port: reads regions of the shards that source ranks hold (a peer daemon over HTTP, the local
 * store, or a test fake).
 */
public interface ShardSource {
    /**
     * Reads the row-major bytes of {@code region} (in the shard's own coordinates) of the shard
     * {@code key} held by {@code rank} on {@code device}, into {@code dst} from its position, exactly
     * {@code dst.remaining()} bytes.
     *
     * @return the CRC32C of those bytes as the holder computed it, to verify the transfer; empty
     *     when the holder vouches for none
     * @throws IOException when the holder cannot be reached or answers with an error
     */
    OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst) throws IOException;

    /**
     * As {@link #read(int, Device, String, Region, ByteBuffer)}, asking the holder to send no faster
     * than {@code pace} bytes/s (0: as fast as it can). Sources that cannot pace ignore it.
     */
    default OptionalInt read(int rank, Device device, String key, Region region, ByteBuffer dst, long pace)
            throws IOException {
        return read(rank, device, key, region, dst);
    }

    /**
     * Completes once {@code key} of {@code rank} can be read without waiting (exceptionally when it
     * never will be): at once for a source whose shards are all in place. The {@link Executor} takes
     * a late rank's pieces in the order they become readable.
     */
    default java.util.concurrent.CompletableFuture<?> readable(int rank, String key) {
        return java.util.concurrent.CompletableFuture.completedFuture(null);
    }
}
