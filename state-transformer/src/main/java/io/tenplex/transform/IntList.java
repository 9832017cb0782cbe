package io.tenplex.transform;

import java.util.Arrays;

/** A growable array of ints (the planner's tables: no boxing). */
final class IntList {
    private int[] values = new int[1024];
    private int size;

    void add(int v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, Math.multiplyExact(size, 2));
        }
        values[size++] = v;
    }

    void set(int i, int v) {
        values[i] = v;
    }

    int size() {
        return size;
    }

    int[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
