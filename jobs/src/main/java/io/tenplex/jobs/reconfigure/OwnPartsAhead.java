package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.LocalPlanner;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * A daemon's own parts planned ahead of their changes (plan ahead: when a resource change is posted,
 * while the job still trains towards its stop step), kept by what they depend on: the model, both
 * placements, the partner copies and the worker. The saved layouts, the step and the change's id do not
 * change the planned pieces (they are bound when the change comes), so the change's part reuses one
 * whose inputs are equal; the planner is deterministic, so a reused part is the one it would plan
 * again. The most recent {@value #KEPT} are kept (a part at GPT-3's shape holds about 15 MiB), and
 * one is planned at a time.
 */
public final class OwnPartsAhead {
    static final int KEPT = 2;

    /** What an own part depends on. */
    record Key(String model, ConfigJson.Placed from, ConfigJson.Placed to, Map<Integer, List<Integer>> copies,
            int worker) {
        static Key of(ChangeSpec spec, int worker) {
            return new Key(spec.modelDigest(), spec.from(), spec.to(), spec.copies(), worker);
        }
    }

    /** Both PTCs as built from the model and placements, and the part planned from them. */
    record Planned(Ptc from, Ptc to, LocalPlanner.OwnPart own) {}

    private final Map<Key, CompletableFuture<Planned>> byInputs = new LinkedHashMap<>(8, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, CompletableFuture<Planned>> eldest) {
            return size() > KEPT;
        }
    };
    /** Held while a part is planned ahead: one at a time, so plan ahead never doubles the planning heap. */
    private final Object planning = new Object();
    private long used;

    /**
     * The part planned ahead for these inputs: planned here by {@code planner} unless it was, or is
     * being, planned (then that one, waited for).
     *
     * @throws RuntimeException what the planner threw (nothing is kept then)
     */
    Planned plan(Key k, Supplier<Planned> planner) {
        CompletableFuture<Planned> f;
        boolean mine = false;
        synchronized (this) {
            f = byInputs.get(k);
            if (f == null) {
                f = new CompletableFuture<>();
                byInputs.put(k, f);
                mine = true;
            }
        }
        if (mine) {
            try {
                synchronized (planning) {
                    f.complete(planner.get());
                }
            } catch (RuntimeException | Error e) {
                synchronized (this) {
                    byInputs.remove(k, f);
                }
                f.completeExceptionally(e);
                throw e;
            }
        }
        try {
            return f.join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    /** The part planned ahead for these inputs (waiting for one being planned), or null; counted as used. */
    Planned use(Key k) {
        CompletableFuture<Planned> f;
        synchronized (this) {
            f = byInputs.get(k);
        }
        if (f == null) {
            return null;
        }
        try {
            Planned p = f.join();
            synchronized (this) {
                used++;
            }
            return p;
        } catch (CompletionException | java.util.concurrent.CancellationException e) {
            return null; // its planning failed: the change plans, and says why
        }
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
