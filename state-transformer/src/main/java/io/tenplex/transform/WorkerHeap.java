package io.tenplex.transform;

import java.util.Arrays;

/**
 * Workers ordered by what they have sent so far: an indexed binary heap over the planner's shared
 * {@code sent} array, ties to the lowest worker. The least-loaded worker is read in O(1) and a
 * worker's grown load is re-filed in O(log W). Holder sets with the same workers share one heap.
 * Workers are dense indexes, ascending with the worker numbers.
 */
final class WorkerHeap {
    private final long[] sent;
    private final int[] heap;
    private final int[] position;

    /** @param workers the dense workers of the heap, ascending */
    WorkerHeap(int[] workers, long[] sent) {
        this.sent = sent;
        this.heap = workers.clone();
        this.position = new int[sent.length];
        Arrays.fill(position, -1);
        for (int i = 0; i < heap.length; i++) {
            position[heap[i]] = i;
        }
        for (int i = heap.length / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    /** The worker that has sent least (ties: the lowest). */
    int leastLoaded() {
        return heap[0];
    }

    boolean has(int w) {
        return position[w] >= 0;
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
