package io.tenplex.datasets;

import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.store.StoreException;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The daemon heap the dataset mounts may hold (their indexes, partitions, sample tables and view
 * files; the samples themselves live in the off-heap store): each mount reserves an estimate
 * before anything of that size is built and releases it when it is closed. A mount that could
 * never fit is a {@code 413}, one that does not fit beside the others now a {@code 507}.
 * Thread-safe.
 */
final class MountHeap {
    /** The default budget: a quarter of the JVM's maximum heap. */
    static final double DEFAULT_FRACTION = 0.25;
    /** Heap per index sample kept by a mount: the index's begin and end, the partition's order. */
    static final long PER_INDEX_SAMPLE = 8 + 8 + 4;
    /** Heap per index line while parsing (arrays growing to twice their size) and per index byte. */
    static final long PER_PARSED_LINE = 48;
    /**
     * Heap per local sample: kept (shard ids, offsets, fill and claim flags, the sorted lookup, the view's
     * {@code .idx}, {@code .meta} and {@code .npy} files) and, while the mount is built, the copies
     * its builders make.
     */
    static final long PER_LOCAL_SAMPLE = 96;
    /**
     * Heap per shard file and per index file (objects, path names, view entries, list lines): about
     * 1,300 bytes are kept per shard file.
     */
    static final long PER_FILE = 2048;
    static final String HOW = "serve fewer ranks per daemon (mount on more daemons, each with its own 'ranks'), "
            + "unmount other datasets, or give the daemon more heap (TENPLEXD_JAVA_OPTS=-Xmx...; the dataset "
            + "budget is a quarter of it)";

    private final long limit;
    private final AtomicLong used = new AtomicLong();

    MountHeap(long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("dataset heap budget " + limit + " (expected: >= 0)");
        }
        this.limit = limit;
    }

    static MountHeap ofMaxHeap() {
        return new MountHeap((long) (Runtime.getRuntime().maxMemory() * DEFAULT_FRACTION));
    }

    long limit() {
        return limit;
    }

    long used() {
        return used.get();
    }

    /** The heap to parse an index text of {@code chars} characters and {@code lines} lines. */
    static long parsing(long chars, long lines) {
        return chars + lines * PER_PARSED_LINE;
    }

    /** The heap a mount of these local ranks of {@code partition} keeps and needs while built. */
    static long mount(DatasetIndex index, DataPartition partition, List<Integer> ranks) {
        long local = 0;
        long shardFiles = 0;
        for (int r : ranks) {
            local += partition.batches() == 0 ? 0 : (long) partition.localBatch(r) * partition.batches();
            shardFiles += partition.shardFiles(r) + 8; // and the rank's directories and small files
        }
        long urls = 0;
        for (DatasetIndex.File f : index.files()) {
            urls += 2L * f.url().length() + PER_FILE;
        }
        return index.size() * PER_INDEX_SAMPLE + urls + local * PER_LOCAL_SAMPLE + shardFiles * PER_FILE;
    }

    /**
     * Reserves {@code bytes} for {@code what}.
     *
     * @throws StoreException {@code TOO_LARGE} if they exceed the whole budget,
     *     {@code INSUFFICIENT_STORAGE} if they do not fit beside the heap reserved now
     */
    Reservation reserve(long bytes, String what) {
        Reservation r = new Reservation(what);
        r.resize(bytes);
        return r;
    }

    /** Takes {@code bytes} more for a reservation that then holds {@code total}. */
    private void take(long bytes, long total, String what) {
        if (total > limit) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, what + " needs about " + mib(total)
                    + " of daemon heap, more than the whole dataset heap budget of " + mib(limit) + "; " + HOW);
        }
        for (long u; ; ) {
            u = used.get();
            if (u + bytes > limit) {
                throw new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE, what + " needs about " + mib(total)
                        + " of daemon heap; the dataset heap budget is " + mib(limit) + " and " + mib(u)
                        + " of it is held by other mounts (try again once they are unmounted); " + HOW);
            }
            if (used.compareAndSet(u, u + bytes)) {
                return;
            }
        }
    }

    private static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    /** Heap held for one mount (or one mount request); {@link #close()} gives it back, once. */
    final class Reservation implements AutoCloseable {
        private final String what;
        private long bytes;
        private boolean closed;

        private Reservation(String what) {
            this.what = what;
        }

        /** Grows or shrinks the reservation; growing may throw as {@link #reserve} does (it is unchanged then). */
        synchronized void resize(long newBytes) {
            if (closed) {
                throw new IllegalStateException("reservation for " + what + " already released");
            }
            if (newBytes > bytes) {
                take(newBytes - bytes, newBytes, what);
            } else {
                used.addAndGet(newBytes - bytes);
            }
            bytes = newBytes;
        }

        synchronized long bytes() {
            return bytes;
        }

        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                used.addAndGet(-bytes);
            }
        }
    }
}
