package io.tenplex.datasets.rehearsal;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The memory R_n^i of one class on one rank: up to {@code capacity} representatives in slots that only
 * grow (a slot, once filled, stays valid until the buffer is re-partitioned). A candidate is appended
 * while there is room and otherwise replaces a representative chosen uniformly at random (Algorithm 1).
 * Not thread-safe: the owning {@link RankBuffer} locks.
 */
final class ClassMemory {
    private final int capacity;
    private final List<Sample> slots = new ArrayList<>();

    ClassMemory(int capacity) {
        this.capacity = capacity;
    }

    /** Inserts {@code s}; answers the representative it replaced, or null when it was appended. */
    Sample insert(Sample s, Random random) {
        if (slots.size() < capacity) {
            slots.add(s);
            return null;
        }
        return slots.set(random.nextInt(capacity), s);
    }

    int size() {
        return slots.size();
    }

    Sample get(int slot) {
        return slot >= 0 && slot < slots.size() ? slots.get(slot) : null;
    }

    List<Sample> all() {
        return List.copyOf(slots);
    }
}
