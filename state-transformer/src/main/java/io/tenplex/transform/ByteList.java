package io.tenplex.transform;

import java.util.Arrays;

/** A growable array of bytes (the planner's piece kinds). */
final class ByteList {
    private byte[] values = new byte[1024];
    private int size;

    void add(byte v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, Math.multiplyExact(size, 2));
        }
        values[size++] = v;
    }

    byte[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
