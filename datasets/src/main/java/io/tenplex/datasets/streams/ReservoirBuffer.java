package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.List;

/**
 * Melissa's Reservoir (Algorithm 1): new samples are unseen; each of a batch's draws picks uniformly
 * among seen and unseen samples (with replacement), moving a drawn unseen one to the seen ones; a
 * put into a full buffer evicts a random seen sample, and waits only while the buffer is full of
 * unseen ones. Draws need more samples than the threshold; once reception is over the threshold
 * lifts and every draw removes what it drew, so the buffer drains.
 */
final class ReservoirBuffer extends TrainingBuffer {
    private final List<Sample> seen = new ArrayList<>();
    private final List<Sample> unseen = new ArrayList<>();

    ReservoirBuffer(int capacity, int threshold, long seed) {
        super(capacity, threshold, seed);
    }

    @Override
    boolean canPut() {
        return unseen.size() < capacity;
    }

    @Override
    void put(Sample s) {
        if (size() >= capacity) {
            left.add(removeAt(seen, random.nextInt(seen.size())));
        }
        unseen.add(s);
    }

    @Override
    boolean canTake(int n) {
        return size() > effectiveThreshold();
    }

    @Override
    List<Sample> take(int n) {
        List<Sample> batch = new ArrayList<>(n);
        while (batch.size() < n && size() > 0) {
            batch.add(draw());
        }
        return batch;
    }

    /** One draw of Algorithm 1's get(). */
    private Sample draw() {
        int i = random.nextInt(size());
        Sample s;
        if (i < unseen.size()) {
            s = removeAt(unseen, i);
            if (!receptionOver()) {
                seen.add(s);
            }
        } else {
            s = receptionOver() ? removeAt(seen, i - unseen.size()) : seen.get(i - unseen.size());
        }
        s.read();
        if (receptionOver()) { // every draw at the end removes what it drew
            left.add(s);
        }
        return s;
    }

    private static Sample removeAt(List<Sample> list, int i) {
        Sample last = list.remove(list.size() - 1);
        return i == list.size() ? last : list.set(i, last);
    }

    @Override
    int size() {
        return seen.size() + unseen.size();
    }

    @Override
    int unseen() {
        return unseen.size();
    }

    @Override
    void restore(Sample s) {
        (s.reads() > 0 ? seen : unseen).add(s);
    }

    @Override
    boolean giveBack(Sample s) {
        for (int i = 0; i < seen.size(); i++) {
            Sample held = seen.get(i);
            if (held.id() == s.id()) { // still held: unseen again if this was its only read
                if (held != s) {
                    held.unread(); // a copy a relaying daemon sent back: undo the read of the one held
                }
                if (held.reads() == 0) {
                    unseen.add(removeAt(seen, i));
                }
                return false;
            }
        }
        for (Sample u : unseen) {
            if (u.id() == s.id()) { // held, unseen already (its bytes counted)
                return false;
            }
        }
        restore(s);
        return true;
    }

    @Override
    List<Sample> held() {
        List<Sample> all = new ArrayList<>(unseen);
        all.addAll(seen);
        return all;
    }

    @Override
    List<Sample> drainAll() {
        List<Sample> all = new ArrayList<>(unseen);
        all.addAll(seen);
        unseen.clear();
        seen.clear();
        return all;
    }
}
