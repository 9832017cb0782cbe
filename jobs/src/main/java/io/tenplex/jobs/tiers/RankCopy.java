package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Region;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import io.tenplex.store.memory.Crc32c;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32C;

/**
 * Copies one sealed rank tree of a generation from the daemon that holds it into this daemon's
 * {@code replicas/<step>/<rank>}: tensors with paced range reads into off-heap memory, files whole,
 * each checked against the seal's CRC32C. The tree is assembled under {@code <rank>.incoming} and moved
 * into place whole; its manifest is written last, so a replica with a manifest is complete.
 */
final class RankCopy {
    private final TensorStore store;
    private final DaemonClient client;
    private final RangeReads reads;
    private final Duration timeout;
    private final long pace;

    /** @param pace bytes/s asked of the holder (0: as fast as the link goes) */
    RankCopy(TensorStore store, DaemonClient client, RangeReads reads, Duration timeout, long pace) {
        this.store = store;
        this.client = client;
        this.reads = reads;
        this.timeout = timeout;
        this.pace = pace;
    }

    /** Copies rank {@code m.rank()} of generation {@code step} from {@code holder}; its bytes. */
    long copy(InetSocketAddress holder, JobLayout paths, long step, SealManifest m, byte[] manifest)
            throws IOException, InterruptedException {
        int rank = m.rank();
        StorePath source = paths.generation(step).child(Integer.toString(rank));
        StorePath incoming = paths.replicas(step).child(rank + ".incoming");
        deleteIfThere(incoming);
        store.mkdirs(incoming);
        long bytes = 0;
        try {
            for (Map.Entry<String, SealManifest.Item> t : m.tensors().entrySet()) {
                bytes += copyTensor(holder, under(source, t.getKey()), under(incoming, t.getKey()), t.getValue());
            }
            for (Map.Entry<String, SealManifest.Item> f : m.files().entrySet()) {
                bytes += copyFile(holder, under(source, f.getKey()), under(incoming, f.getKey()), f.getValue());
            }
            StorePath replica = paths.replica(step, rank);
            deleteIfThere(replica);
            store.move(incoming, replica);
            SmallFiles.put(store, paths.replicaManifest(step, rank), manifest);
            return bytes;
        } catch (IOException | InterruptedException | RuntimeException e) {
            deleteIfThere(incoming);
            throw e;
        }
    }

    private static StorePath under(StorePath root, String relative) {
        return StorePath.parse(root + "/" + relative);
    }

    private long copyTensor(InetSocketAddress holder, StorePath from, StorePath to, SealManifest.Item item)
            throws IOException, InterruptedException {
        Shape shape = Shape.of(item.shape().stream().mapToLong(Long::longValue).toArray());
        TensorMeta meta = new TensorMeta(DType.fromName(item.dtype()), shape);
        Blob blob = store.allocator().allocate(meta.byteSize());
        boolean handedOver = false;
        try {
            ByteBuffer dst = blob.singleChunk();
            if (dst == null) {
                throw new IOException(from + " has " + meta.byteSize() + " bytes: larger than one chunk, not copied");
            }
            CompletableFuture<OptionalInt> read = reads.readRegion(holder, from, Region.whole(shape), dst, pace);
            if (!finishes(read)) {
                handedOver = true; // the read may still write into the blob: freed once it ends
                read.whenComplete((x, t) -> blob.release());
                throw new IOException(from + ": no answer within " + timeout.toSeconds() + " s");
            }
            OptionalInt crc = await(read, from);
            check(from, crc.isPresent() ? Crc32c.hex(crc.getAsInt()) : null, item.crc32c());
            handedOver = true; // the store owns the blob from here, also when the put fails
            store.putTensor(to, meta, blob, BlockChecksums.compute(blob, store.checksumBlock()), true);
            return meta.byteSize();
        } finally {
            if (!handedOver) {
                blob.release();
            }
        }
    }

    private long copyFile(InetSocketAddress holder, StorePath from, StorePath to, SealManifest.Item item)
            throws IOException, InterruptedException {
        DaemonClient.SavedValue v = await(client.readValue(holder, from), from);
        CRC32C c = new CRC32C();
        c.update(v.bytes());
        check(from, Crc32c.hex((int) c.getValue()), item.crc32c());
        SmallFiles.put(store, to, v.bytes());
        return v.bytes().length;
    }

    private static void check(StorePath what, String got, String sealed) throws IOException {
        if (sealed != null && !sealed.equals(got)) {
            throw new IOException(what + " arrived with CRC32C " + got + ", sealed with " + sealed);
        }
    }

    /** Whether {@code call} ends within the timeout. */
    private boolean finishes(CompletableFuture<?> call) throws InterruptedException {
        try {
            call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }

    private <T> T await(CompletableFuture<T> call, StorePath what) throws IOException, InterruptedException {
        try {
            return call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IOException(what + ": " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IOException(what + ": no answer within " + timeout.toSeconds() + " s");
        }
    }

    private void deleteIfThere(StorePath p) {
        try {
            store.delete(p);
        } catch (StoreException e) {
            if (e.kind() != StoreException.Kind.NOT_FOUND) {
                throw e;
            }
        }
    }
}
