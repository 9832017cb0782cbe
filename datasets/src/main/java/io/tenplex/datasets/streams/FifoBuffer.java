package io.tenplex.datasets.streams;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** FIFO: samples in arrival order, each read once; puts wait while it is full. */
final class FifoBuffer extends TrainingBuffer {
    private final ArrayDeque<Sample> queue = new ArrayDeque<>();

    FifoBuffer(int capacity) {
        super(capacity, 0, 0);
    }

    @Override
    boolean canPut() {
        return queue.size() < capacity;
    }

    @Override
    void put(Sample s) {
        queue.addLast(s);
    }

    @Override
    boolean canTake(int n) {
        return queue.size() >= n || (receptionOver() && !queue.isEmpty());
    }

    @Override
    List<Sample> take(int n) {
        List<Sample> batch = new ArrayList<>(Math.min(n, queue.size()));
        while (batch.size() < n && !queue.isEmpty()) {
            Sample s = queue.removeFirst();
            s.read();
            batch.add(s);
            left.add(s);
        }
        return batch;
    }

    @Override
    int size() {
        return queue.size();
    }

    @Override
    int unseen() {
        return queue.size();
    }

    @Override
    void restore(Sample s) {
        queue.addLast(s);
    }

    @Override
    boolean giveBack(Sample s) {
        queue.addFirst(s);
        return true;
    }

    @Override
    List<Sample> held() {
        return new ArrayList<>(queue);
    }

    @Override
    List<Sample> drainAll() {
        List<Sample> all = new ArrayList<>(queue);
        queue.clear();
        return all;
    }
}
