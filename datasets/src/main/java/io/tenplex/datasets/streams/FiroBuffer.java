package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.List;

/**
 * FIRO (first in, random out): each sample read once, from a uniformly random position; a batch of
 * n only while the buffer holds more than the threshold before each of its n draws (so at least
 * threshold + n), the threshold lifting when reception is over. Puts wait while it is full.
 */
final class FiroBuffer extends TrainingBuffer {
    private final List<Sample> list = new ArrayList<>();

    FiroBuffer(int capacity, int threshold, long seed) {
        super(capacity, threshold, seed);
    }

    @Override
    boolean canPut() {
        return list.size() < capacity;
    }

    @Override
    void put(Sample s) {
        list.add(s);
    }

    @Override
    boolean canTake(int n) {
        return receptionOver() ? !list.isEmpty() : list.size() >= effectiveThreshold() + n;
    }

    @Override
    List<Sample> take(int n) {
        List<Sample> batch = new ArrayList<>(Math.min(n, list.size()));
        while (batch.size() < n && !list.isEmpty()) {
            Sample s = removeAt(random.nextInt(list.size()));
            s.read();
            batch.add(s);
            left.add(s);
        }
        return batch;
    }

    /** Removes position {@code i} in O(1): the last sample takes its place (order is random anyway). */
    private Sample removeAt(int i) {
        Sample last = list.remove(list.size() - 1);
        return i == list.size() ? last : list.set(i, last);
    }

    @Override
    int size() {
        return list.size();
    }

    @Override
    int unseen() {
        return list.size();
    }

    @Override
    void restore(Sample s) {
        list.add(s);
    }

    @Override
    boolean giveBack(Sample s) {
        list.add(s);
        return true;
    }

    @Override
    List<Sample> held() {
        return new ArrayList<>(list);
    }

    @Override
    List<Sample> drainAll() {
        List<Sample> all = new ArrayList<>(list);
        list.clear();
        return all;
    }
}
