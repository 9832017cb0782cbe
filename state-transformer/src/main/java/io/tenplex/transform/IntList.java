package io.tenplex.transform;

import java.util.Arrays;

/** A growable array of ints (the planner's tables: no boxing). */
final class IntList {
    private int[] values;
    private int size;

    /** @param capacity the expected size (it grows beyond by half again each time) */
    IntList(int capacity) {
        values = new int[Math.max(16, capacity)];
    }

    void add(int v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, Math.addExact(size, size / 2 + 16));
        }
        values[size++] = v;
    }

    void set(int i, int v) {
        values[i] = v;
    }

    int size() {
        return size;
    }

    /** The values (the backing array itself when it is full: the list is not used after). */
    int[] toArray() {
        return size == values.length ? values : Arrays.copyOf(values, size);
    }
}
