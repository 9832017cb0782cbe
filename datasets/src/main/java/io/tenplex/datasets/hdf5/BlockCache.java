package io.tenplex.datasets.hdf5;

import java.io.IOException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The most recently used decoded blocks of chunked arrays, up to a number of heap bytes, so that
 * reading a block's rows one by one decodes its chunks once while it stays here. Threads that miss
 * the same block at the same time wait for one decode. The arrays handed out are shared: callers
 * read them and never write them. Thread-safe.
 */
final class BlockCache {
    private record Key(Hdf5Array array, long block) {}

    private final long limit;
    private final LinkedHashMap<Key, byte[]> blocks = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<Key, CompletableFuture<byte[]>> decoding = new HashMap<>();
    private long bytes;
    private long decoded;

    /** @param limit the heap bytes the cached blocks may hold together */
    BlockCache(long limit) {
        this.limit = limit;
    }

    /**
     * The bytes of a block of {@code array} (borrowed: read only), decoded now if it is not cached
     * (or by the thread already decoding it).
     *
     * @throws IOException if the block cannot be decoded
     */
    byte[] get(Hdf5Array array, long block) throws IOException {
        Key k = new Key(array, block);
        CompletableFuture<byte[]> mine;
        CompletableFuture<byte[]> theirs;
        synchronized (this) {
            byte[] b = blocks.get(k);
            if (b != null) {
                return b;
            }
            theirs = decoding.get(k);
            mine = theirs == null ? new CompletableFuture<>() : null;
            if (mine != null) {
                decoding.put(k, mine);
                decoded++;
            }
        }
        return mine == null ? await(theirs) : decode(k, mine);
    }

    private byte[] decode(Key k, CompletableFuture<byte[]> mine) throws IOException {
        try {
            byte[] b = k.array().decode(k.block());
            put(k, b);
            mine.complete(b);
            return b;
        } catch (IOException | RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            synchronized (this) {
                decoding.remove(k, mine);
            }
        }
    }

    private static byte[] await(CompletableFuture<byte[]> theirs) throws IOException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return theirs.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the decode ends on its own: wait for it, then say so
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof UndecodableException u ? new UndecodableException(u.getMessage(), u)
                            : e.getCause() instanceof IOException io ? new IOException(io.getMessage(), io)
                            : new IOException("decoding failed: " + e.getCause(), e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private synchronized void put(Key k, byte[] b) {
        if (k.array().dropped) { // decoded from a version dropped meanwhile: caching it would keep that version
            return;
        }
        byte[] old = blocks.put(k, b);
        bytes += b.length - (old == null ? 0 : old.length);
        for (Iterator<Map.Entry<Key, byte[]>> it = blocks.entrySet().iterator(); bytes > limit && it.hasNext(); ) {
            Map.Entry<Key, byte[]> e = it.next();
            bytes -= e.getValue().length;
            it.remove();
        }
    }

    /** Forgets the blocks of {@code array}, and those decoded from it from now on. */
    synchronized void drop(Hdf5Array array) {
        array.dropped = true;
        for (Iterator<Map.Entry<Key, byte[]>> it = blocks.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Key, byte[]> e = it.next();
            if (e.getKey().array() == array) {
                bytes -= e.getValue().length;
                it.remove();
            }
        }
    }

    /** Blocks decoded so far (misses that decoded; a miss that waited for another's decode is not one). */
    synchronized long decoded() {
        return decoded;
    }

    /** Heap bytes held now. */
    synchronized long bytes() {
        return bytes;
    }
}
