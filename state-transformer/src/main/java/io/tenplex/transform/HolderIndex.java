package io.tenplex.transform;

import java.util.Arrays;

/**
 * The old ranks holding one cell (tensors of one stage cut the same way share it), indexed for the
 * planner: whether a rank holds it, the lowest holding rank on each worker, and the holding workers
 * ordered by what they have sent so far (an indexed binary heap over the shared {@code sent} array,
 * ties to the lowest worker), so that choosing the least-loaded holder costs O(1) and a worker's new
 * load is re-filed in O(log W). Workers are dense indexes, ascending with the worker numbers.
 */
final class HolderIndex {
    /** The holding ranks, ascending (shared with the PTC: do not modify). */
    final int[] holders;
    /** Per dense worker: the lowest holding rank on it, or -1. */
    final int[] firstOnWorker;
    private final boolean[] holds;
    private final long[] sent;
    private final int[] heap;
    private final int[] position;

    /**
     * @param holders the holding ranks, ascending
     * @param workerOfRank the dense worker of every old rank
     * @param sent every dense worker's bytes sent so far (shared by all sets, read here)
     */
    HolderIndex(int[] holders, int[] workerOfRank, long[] sent) {
        this.holders = holders;
        this.sent = sent;
        this.firstOnWorker = new int[sent.length];
        Arrays.fill(firstOnWorker, -1);
        this.holds = new boolean[workerOfRank.length];
        int workers = 0;
        for (int h : holders) {
            holds[h] = true;
            int w = workerOfRank[h];
            if (firstOnWorker[w] < 0) {
                firstOnWorker[w] = h;
                workers++;
            }
        }
        this.heap = new int[workers];
        this.position = new int[sent.length];
        Arrays.fill(position, -1);
        int n = 0;
        for (int w = 0; w < sent.length; w++) {
            if (firstOnWorker[w] >= 0) {
                heap[n] = w;
                position[w] = n++;
            }
        }
        for (int i = heap.length / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    boolean holds(int rank) {
        return holds[rank];
    }

    /** Whether dense worker {@code w} holds the cell. */
    boolean hasWorker(int w) {
        return position[w] >= 0;
    }

    /** The holding worker that has sent least (ties: the lowest). */
    int leastLoaded() {
        return heap[0];
    }

    /** Re-files worker {@code w} after its load grew. */
    void grew(int w) {
        siftDown(position[w]);
    }

    private boolean before(int a, int b) {
        return sent[a] != sent[b] ? sent[a] < sent[b] : a < b;
    }

    private void siftDown(int i) {
        int w = heap[i];
        while (true) {
            int child = 2 * i + 1;
            if (child >= heap.length) {
                break;
            }
            if (child + 1 < heap.length && before(heap[child + 1], heap[child])) {
                child++;
            }
            if (!before(heap[child], w)) {
                break;
            }
            heap[i] = heap[child];
            position[heap[i]] = i;
            i = child;
        }
        heap[i] = w;
        position[w] = i;
    }
}
