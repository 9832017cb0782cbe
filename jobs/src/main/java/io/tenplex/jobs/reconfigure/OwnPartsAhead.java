package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.LocalPlanner;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A daemon's own parts planned ahead of their changes (plan ahead: when a resource change is posted,
 * while the job still trains towards its stop step), kept by what they depend on: the model, both
 * placements, the partner copies and the worker. The saved layouts, the step and the change's id do not
 * change the planned pieces (they are bound when the change comes), so the change's part reuses one
 * whose inputs are equal; the planner is deterministic, so a reused part is the one it would plan
 * again. The most recent {@value #KEPT} are kept.
 */
public final class OwnPartsAhead {
    static final int KEPT = 4;

    /** What an own part depends on. */
    record Key(String model, ConfigJson.Placed from, ConfigJson.Placed to, Map<Integer, List<Integer>> copies,
            int worker) {
        static Key of(ChangeSpec spec, int worker) {
            return new Key(spec.modelDigest(), spec.from(), spec.to(), spec.copies(), worker);
        }
    }

    /** Both PTCs as built from the model and placements, and the part planned from them. */
    record Planned(Ptc from, Ptc to, LocalPlanner.OwnPart own) {}

    private final Map<Key, Planned> byInputs = new LinkedHashMap<>(8, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, Planned> eldest) {
            return size() > KEPT;
        }
    };
    private long used;

    /** The part planned ahead for these inputs, or null; counted as used. */
    synchronized Planned use(Key k) {
        Planned p = byInputs.get(k);
        used += p == null ? 0 : 1;
        return p;
    }

    /** The part planned ahead for these inputs, or null. */
    synchronized Planned peek(Key k) {
        return byInputs.get(k);
    }

    synchronized void put(Key k, Planned p) {
        byInputs.put(k, p);
    }

    /** How many changes used a part planned ahead so far. */
    public synchronized long used() {
        return used;
    }

    /** How many parts planned ahead are kept. */
    public synchronized int size() {
        return byInputs.size();
    }
}
