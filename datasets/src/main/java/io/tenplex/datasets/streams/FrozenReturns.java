package io.tenplex.datasets.streams;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A rank buffer's samples given back while a re-partitioning holds it: held apart while it is frozen
 * (its samples were taken out), handed over when a new config replaces it (retired: it takes nothing
 * more), and never for a Reservoir sample that its last drain took out (it moved with the
 * population). Guarded by the buffer's lock.
 */
final class FrozenReturns {
    private final boolean reservoir;
    private boolean retired;
    /** Given back while frozen (reads undone), last first. */
    private List<Sample> held = new ArrayList<>();
    /** A Reservoir's: the ids of the samples its last drain took out. */
    private Set<Long> drained = Set.of();
    /** A Reservoir's: the ids taken since its last drain (a batch drawn with replacement holds one twice). */
    private final Set<Long> taken = new HashSet<>();

    FrozenReturns(Policy policy) {
        this.reservoir = policy == Policy.RESERVOIR;
    }

    /** The buffer was drained: a Reservoir's samples leave with their ids noted (those of an earlier drain forgotten). */
    void drained(List<Sample> all) {
        drained = Set.of();
        taken.clear();
        if (reservoir && !all.isEmpty()) {
            drained = new HashSet<>();
            all.forEach(s -> drained.add(s.id()));
        }
    }

    boolean retired() {
        return retired;
    }

    /**
     * Takes a given-back sample (its read undone) when the buffer is frozen or retired: held, added
     * to {@code out} (retired), or dropped (a Reservoir's that moved with the population, or taken
     * already); answers false when the buffer itself is to take it.
     */
    boolean take(Sample s, boolean frozen, List<Sample> out) {
        if (!frozen && !retired) {
            return false;
        }
        if (!drained.contains(s.id()) && (!reservoir || taken.add(s.id()))) {
            (retired ? out : held).add(s);
        }
        return true;
    }

    /** The buffer is replaced: answers the samples held, in the order they were handed out. */
    List<Sample> retire() {
        retired = true;
        List<Sample> out = held;
        held = new ArrayList<>();
        java.util.Collections.reverse(out);
        return out;
    }

    /** The buffer unfreezes: answers the samples held, last first (each to go to a FIFO's front). */
    List<Sample> unfreeze() {
        List<Sample> out = held;
        held = new ArrayList<>();
        return out;
    }
}
