package io.tenplex.transform;

import java.util.Arrays;

/**
 * The pieces that must come from another worker, waiting for the planner to choose their holders:
 * kept in primitive arrays, visited largest first and, among equal sizes, in plan order (a counting
 * sort over the few distinct piece sizes, so visiting costs O(n)).
 */
final class RemotePieces {
    /** Visits one remote piece. */
    interface Visitor {
        void visit(int piece, long bytes, HolderIndex holders, int destWorker);
    }

    private int[] piece;
    private long[] bytes;
    private HolderIndex[] holders;
    private int[] destWorker;
    private int size;
    private long total;

    /** @param capacity the expected number of pieces */
    RemotePieces(int capacity) {
        int n = Math.max(16, capacity);
        piece = new int[n];
        bytes = new long[n];
        holders = new HolderIndex[n];
        destWorker = new int[n];
    }

    void add(int p, long b, HolderIndex h, int dest) {
        if (size == piece.length) {
            int n = Math.addExact(size, size / 2 + 16);
            piece = Arrays.copyOf(piece, n);
            bytes = Arrays.copyOf(bytes, n);
            holders = Arrays.copyOf(holders, n);
            destWorker = Arrays.copyOf(destWorker, n);
        }
        piece[size] = p;
        bytes[size] = b;
        holders[size] = h;
        destWorker[size] = dest;
        size++;
        total += b;
    }

    /** Bytes of all remote pieces. */
    long bytes() {
        return total;
    }

    /** Visits every piece, largest first, equal sizes in the order they were added. */
    void largestFirst(Visitor v) {
        for (int i : order()) {
            v.visit(piece[i], bytes[i], holders[i], destWorker[i]);
        }
    }

    /** The pieces' indexes, largest first, equal sizes in the order they were added. */
    int[] order() {
        long[] sizes = Arrays.copyOf(bytes, size);
        Arrays.sort(sizes);
        int distinct = 0;
        for (int i = 0; i < sizes.length; i++) {
            if (i == 0 || sizes[i] != sizes[i - 1]) {
                sizes[distinct++] = sizes[i];
            }
        }
        sizes = Arrays.copyOf(sizes, distinct);
        int[] bucket = new int[size];
        int[] start = new int[distinct + 1];
        for (int i = 0; i < size; i++) {
            bucket[i] = distinct - 1 - Arrays.binarySearch(sizes, bytes[i]); // largest size: bucket 0
            start[bucket[i] + 1]++;
        }
        for (int b = 0; b < distinct; b++) {
            start[b + 1] += start[b];
        }
        int[] order = new int[size];
        for (int i = 0; i < size; i++) {
            order[start[bucket[i]]++] = i;
        }
        return order;
    }

    int size() {
        return size;
    }

    int piece(int i) {
        return piece[i];
    }

    long bytes(int i) {
        return bytes[i];
    }

    HolderIndex holders(int i) {
        return holders[i];
    }
}
