package io.tenplex.transform;

import java.util.Arrays;
import java.util.function.Function;

/**
 * The old ranks holding one cell (tensors of one stage cut the same way share it), indexed for the
 * planner: whether a rank holds it, the lowest holding rank on each worker, and the heap of its
 * holding workers by load ({@link WorkerHeap}, shared with the sets on the same workers).
 */
final class HolderIndex {
    /** The holding ranks, ascending (shared with the PTC: do not modify). */
    final int[] holders;
    /** Per dense worker: the lowest holding rank on it (else the lowest with a copy there), or -1. */
    final int[] firstOnWorker;
    /** The holding workers by what they have sent. */
    final WorkerHeap heap;
    /** The holding workers (dense), ascending. */
    final int[] workers;
    private final boolean[] holds;

    /**
     * @param holders the holding ranks, ascending
     * @param workerOfRank the dense worker of every old rank
     * @param workers how many dense workers there are
     * @param heaps the heap of a list of dense workers (ascending), shared by equal lists
     */
    HolderIndex(int[] holders, int[] workerOfRank, int workers, Function<int[], WorkerHeap> heaps) {
        this(holders, workerOfRank, new int[0][], workers, heaps);
    }

    /**
     * @param copyWorkers per rank, the dense workers keeping a complete copy of its tree (none when
     *     the rank is past the array's end or its entry is null); a copy counts as the rank on that worker
     */
    HolderIndex(int[] holders, int[] workerOfRank, int[][] copyWorkers, int workers, Function<int[], WorkerHeap> heaps) {
        this.holders = holders;
        this.firstOnWorker = new int[workers];
        Arrays.fill(firstOnWorker, -1);
        this.holds = new boolean[workerOfRank.length];
        int n = 0;
        for (int h : holders) {
            holds[h] = true;
            int w = workerOfRank[h];
            if (firstOnWorker[w] < 0) {
                firstOnWorker[w] = h;
                n++;
            }
        }
        for (int h : holders) { // copies after every rank's own worker: a worker's own rank is read first
            int[] extra = h < copyWorkers.length ? copyWorkers[h] : null;
            for (int w : extra == null ? new int[0] : extra) {
                if (firstOnWorker[w] < 0) {
                    firstOnWorker[w] = h;
                    n++;
                }
            }
        }
        int[] mine = new int[n];
        n = 0;
        for (int w = 0; w < workers; w++) {
            if (firstOnWorker[w] >= 0) {
                mine[n++] = w;
            }
        }
        this.workers = mine;
        this.heap = heaps.apply(mine);
    }

    /** The most (holder sets x (workers + ranks)) entries the planner's holder indexes may take. */
    static final long MAX_INDEX = 1L << 26;

    /**
     * Refuses a change whose holder indexes would not fit: one per holder set of the old configuration
     * (at most P x (T + 1) x E), each with an entry per worker and per rank.
     *
     * @throws IllegalArgumentException naming the sizes and the limit
     */
    static void checkSize(io.tenplex.ptc.Ptc from, int workers) {
        var c = from.config();
        long sets = (long) c.pp() * (c.tp() + 1) * c.ep();
        long entries = sets * ((long) workers + from.worldSize());
        if (entries > MAX_INDEX) {
            throw new IllegalArgumentException("the old configuration " + c + " has up to " + sets + " holder sets over "
                    + workers + " workers and " + from.worldSize() + " ranks: " + entries + " index entries, over the "
                    + "planner's limit of " + MAX_INDEX);
        }
    }

    boolean holds(int rank) {
        return holds[rank];
    }
}
