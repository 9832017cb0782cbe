package io.tenplex.datasets.hdf5;

import java.io.IOException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The most recently used decoded blocks of chunked arrays, up to a number of heap bytes, so that
 * reading a block's rows one by one decodes its chunks once while it stays here. Two threads that
 * miss the same block may both decode it (the second copy replaces the first). Thread-safe.
 */
final class BlockCache {
    private record Key(Hdf5Array array, long block) {}

    private final long limit;
    private final LinkedHashMap<Key, byte[]> blocks = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long decoded;

    /** @param limit the heap bytes the cached blocks may hold together */
    BlockCache(long limit) {
        this.limit = limit;
    }

    /**
     * The bytes of a block of {@code array}, decoded now if it is not cached.
     *
     * @throws IOException if the block cannot be decoded
     */
    byte[] get(Hdf5Array array, long block) throws IOException {
        Key k = new Key(array, block);
        synchronized (this) {
            byte[] b = blocks.get(k);
            if (b != null) {
                return b;
            }
        }
        byte[] b;
        try {
            b = array.decode(block);
        } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
        }
        put(k, b);
        return b;
    }

    private synchronized void put(Key k, byte[] b) {
        decoded++;
        byte[] old = blocks.put(k, b);
        bytes += b.length - (old == null ? 0 : old.length);
        for (Iterator<Map.Entry<Key, byte[]>> it = blocks.entrySet().iterator(); bytes > limit && it.hasNext(); ) {
            Map.Entry<Key, byte[]> e = it.next();
            bytes -= e.getValue().length;
            it.remove();
        }
    }

    /** Forgets the blocks of {@code array}. */
    synchronized void drop(Hdf5Array array) {
        for (Iterator<Map.Entry<Key, byte[]>> it = blocks.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Key, byte[]> e = it.next();
            if (e.getKey().array() == array) {
                bytes -= e.getValue().length;
                it.remove();
            }
        }
    }

    /** Blocks decoded so far (misses). */
    synchronized long decoded() {
        return decoded;
    }

    /** Heap bytes held now. */
    synchronized long bytes() {
        return bytes;
    }
}
