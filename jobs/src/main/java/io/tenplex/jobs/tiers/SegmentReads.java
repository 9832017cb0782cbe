package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.store.StorePath;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32C;

/** Reads the segments of a worker's block from its daemon's generation, checked against the seal's CRC32C. */
final class SegmentReads {
    private final DaemonClient client;
    private final RangeReads reads;
    private final Duration timeout;
    private final long pace;

    SegmentReads(DaemonClient client, RangeReads reads, Duration timeout, long pace) {
        this.client = client;
        this.reads = reads;
        this.timeout = timeout;
        this.pace = pace;
    }

    /** The bytes of {@code s} of generation {@code step} on {@code holder}, in a buffer of their own. */
    ByteBuffer read(InetSocketAddress holder, JobLayout paths, long step, BlockLayout.Segment s)
            throws IOException, InterruptedException {
        StorePath path = StorePath.parse(paths.generation(step) + "/" + s.rank() + "/" + s.path());
        if (!s.tensor()) {
            byte[] bytes = await(client.readValue(holder, path), path).bytes();
            CRC32C c = new CRC32C();
            c.update(bytes);
            check(path, Crc32c.hex((int) c.getValue()), s.item().crc32c());
            return ByteBuffer.wrap(bytes);
        }
        if (s.item().size() > Integer.MAX_VALUE) {
            throw new IOException(path + " has " + s.item().size() + " bytes: over 2 GiB, not erasure-coded");
        }
        ByteBuffer dst = ByteBuffer.allocate((int) s.item().size());
        Shape shape = Shape.of(s.item().shape().stream().mapToLong(Long::longValue).toArray());
        OptionalInt crc = await(reads.readRegion(holder, path, Region.whole(shape), dst, pace), path);
        check(path, crc.isPresent() ? Crc32c.hex(crc.getAsInt()) : null, s.item().crc32c());
        return dst.flip();
    }

    static void check(StorePath what, String got, String sealed) throws IOException {
        if (sealed != null && !sealed.equals(got)) {
            throw new IOException(what + " has CRC32C " + got + ", sealed with " + sealed);
        }
    }

    <T> T await(CompletableFuture<T> call, StorePath what) throws IOException, InterruptedException {
        try {
            return call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IOException(what + ": " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IOException(what + ": no answer within " + timeout.toSeconds() + " s");
        }
    }
}
