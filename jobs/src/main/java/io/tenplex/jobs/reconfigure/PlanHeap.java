package io.tenplex.jobs.reconfigure;

import io.tenplex.store.StoreException;
import io.tenplex.transform.Plan;
import java.util.Locale;

/**
 * The coordinator's heap for one change, checked before anything starts: it builds, binds and encodes
 * one daemon's part at a time (and holds the encoded parts still being sent, up to
 * {@link #IN_FLIGHT_PIECES} pieces), so what it needs at once is about the largest part's pieces times
 * what a piece takes while built, bound and encoded. A change whose largest part (in central mode,
 * the whole plan) would not fit in {@link #FRACTION} of the JVM's maximum heap is refused with the
 * sizes, rather than run into an {@link OutOfMemoryError} halfway.
 */
public final class PlanHeap {
    /**
     * Heap per piece while its part is built and encoded, without its replica list: an upper estimate of
     * a bound piece with its regions and offsets and of its protobuf message.
     */
    static final long PER_PIECE = 1536;
    /** Heap per replica a piece lists (bound, as protobuf, encoded). */
    static final long PER_REPLICA = 12;
    /** Bytes of an encoded piece without its replicas (with them: 128 + 12 x 64 = 896; measured 848 at 4096 devices). */
    static final long ENCODED_PER_PIECE = 128;
    /** Bytes per replica an encoded piece is counted with (rounded up from the measured size above). */
    static final long ENCODED_PER_REPLICA = 12;
    /** Pieces of encoded parts the coordinator lets wait to be sent before it encodes the next part. */
    static final long IN_FLIGHT_PIECES = 65_536;
    /** The share of the maximum heap one change's parts may take. */
    static final double FRACTION = 0.25;

    private PlanHeap() {
    }

    /**
     * Heap the parts of a change need at once: its largest part built, bound and encoded, and the
     * encoded parts still being sent (at most {@link #IN_FLIGHT_PIECES} pieces of the others).
     */
    static long need(long largest, long total, int replicas) {
        try {
            long building = Math.multiplyExact(largest, PER_PIECE + PER_REPLICA * replicas);
            long sending = Math.multiplyExact(Math.min(IN_FLIGHT_PIECES, Math.max(0, total - largest)),
                    ENCODED_PER_PIECE + ENCODED_PER_REPLICA * replicas);
            return Math.addExact(building, sending);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * @param central the central worker, or -1 (peer to peer)
     * @param maxHeap the JVM's maximum heap ({@link Runtime#maxMemory()})
     * @throws StoreException {@code TOO_LARGE} naming the sizes when the largest part would not fit
     */
    public static void check(Plan plan, int central, long maxHeap) {
        long largest = 0;
        int worker = -1;
        if (central >= 0) {
            largest = plan.pieceCount();
            worker = central;
        } else {
            for (int w : plan.destWorkers()) {
                long n = plan.pieceCountOf(w);
                if (n > largest) {
                    largest = n;
                    worker = w;
                }
            }
        }
        int replicas = plan.from().dp();
        long need = need(largest, plan.pieceCount(), replicas);
        long limit = (long) (maxHeap * FRACTION);
        if (need > limit) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, String.format(Locale.ROOT, "the change %s -> %s "
                    + "(%d pieces) needs about %s of the coordinator's heap for its largest part (%s worker %d: %d "
                    + "pieces, each with up to %d replicas), more than the %s (a quarter of the daemon's maximum heap "
                    + "of %s) it may take; nothing was started. %s", plan.from(), plan.to(), plan.pieceCount(), mib(need),
                    central >= 0 ? "central" : "destination", worker, largest, replicas, mib(limit), mib(maxHeap),
                    central >= 0 ? "Reconfigure peer to peer (without \"central\"), or give the daemon more heap "
                            + "(TENPLEXD_JAVA_OPTS=-Xmx...)" : "Give the daemon more heap (TENPLEXD_JAVA_OPTS=-Xmx...) or "
                                    + "use fewer devices per worker"));
        }
    }

    /** No new shard is over one chunk of the store (each shard is read once, as it is built). */
    static void requireChunks(Plan plan) {
        for (io.tenplex.transform.ShardPlan s : plan.shards()) {
            if (s.byteSize() > io.tenplex.store.memory.Allocator.MAX_CHUNK) {
                throw new IllegalArgumentException("shard " + s.key() + " of rank " + s.destRank() + " has " + s.byteSize()
                        + " bytes; new shards over 1 GiB are not supported yet (use more tensor parallelism)");
            }
        }
    }

    /** Why a coordinator that ran out of heap stopped: the heap and the plan's size. */
    static String ranOut(OutOfMemoryError e, Plan plan) {
        return "the coordinator ran out of heap (" + e.getMessage() + "; maximum heap " + mib(Runtime.getRuntime()
                .maxMemory()) + ") coordinating " + plan.from() + " -> " + plan.to() + " (" + plan.pieceCount()
                + " pieces); every part sent was aborted";
    }

    /** Planning ran out of heap: refused as too large, naming the heap (the planner's tables are garbage by now). */
    public static StoreException planning(String job, Object to, OutOfMemoryError e) {
        return new StoreException(StoreException.Kind.TOO_LARGE, "planning the change of job " + job + " to " + to
                + " ran out of the daemon's heap (" + e.getMessage() + "; maximum heap " + mib(Runtime.getRuntime()
                .maxMemory()) + "); nothing was started. Give the daemon more heap (TENPLEXD_JAVA_OPTS=-Xmx...)");
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }
}
