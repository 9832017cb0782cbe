package io.tenplex.transform;

import java.util.Arrays;

/** A growable array of bytes (the planner's piece kinds). */
final class ByteList {
    private byte[] values;
    private int size;

    /** @param capacity the expected size (it grows beyond by half again each time) */
    ByteList(int capacity) {
        values = new byte[Math.max(16, capacity)];
    }

    void add(byte v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, Math.addExact(size, size / 2 + 16));
        }
        values[size++] = v;
    }

    /** The values (the backing array itself when it is full: the list is not used after). */
    byte[] toArray() {
        return size == values.length ? values : Arrays.copyOf(values, size);
    }
}
