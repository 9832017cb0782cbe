package io.tenplex.jobs.reconfigure;

import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.StageMap;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;

/**
 * A plan made before the state it moves is saved. A plan depends on the model and on the old and
 * new configurations (placement included), never on the saved bytes, so a resource change plans
 * while the job trains towards its stop step ({@link Jobs#planAhead}) and planning costs no
 * downtime. When the reconfiguration starts, the inputs found then (the saved generation's model
 * and configuration) are compared with those the plan assumed: the plan is used only when they are
 * the same, else the change is planned again. {@link #outcome()} says which, and why.
 *
 * <p>Filled once by the planning thread, then read by the reconfiguring thread of the same change.
 */
public final class PlanAhead {
    private Plan plan;
    private Ptc from;
    private Ptc to;
    private String how;
    private long millis = -1;
    private boolean aroundLost;
    private Model stored;
    private volatile String outcome = "not used yet";

    /**
     * How a plan is made: the whole change ({@link Planner}), or one daemon's own part of it; a plan
     * made ahead one way is never used for a change planned another way.
     *
     * @param how what is planned, as the change's events say it
     */
    public record Planning(String how, java.util.function.BiFunction<Ptc, Ptc, Plan> planner) {
        /** The whole change, by the coordinator. */
        public static final Planning WHOLE = new Planning("the whole change", Planner::plan);

        public Plan plan(Ptc from, Ptc to) {
            return planner.apply(from, to);
        }
    }

    /** A plan of {@code from -> to}: made and kept when {@code ahead} is empty, reused when its inputs match. */
    public static Plan plan(PlanAhead ahead, Ptc from, Ptc to) {
        return plan(ahead, from, to, Planning.WHOLE);
    }

    /** As {@link #plan(PlanAhead, Ptc, Ptc)}, made by {@code planning}. */
    public static Plan plan(PlanAhead ahead, Ptc from, Ptc to, Planning planning) {
        if (ahead == null) {
            return planning.plan(from, to);
        }
        synchronized (ahead) {
            if (ahead.plan == null) {
                long t = System.nanoTime();
                ahead.plan = planning.plan(from, to);
                ahead.from = from;
                ahead.to = to;
                ahead.how = planning.how();
                ahead.millis = (System.nanoTime() - t) / 1_000_000;
                return ahead.plan;
            }
            String differs = !ahead.how.equals(planning.how()) ? "it planned " + ahead.how + ", the change plans "
                    + planning.how() : ahead.aroundLost ? "workers lost when it was made answer now"
                    : differs("old", ahead.from, from);
            if (differs == null) {
                differs = differs("new", ahead.to, to);
            }
            if (differs == null) {
                ahead.outcome = "plan made ahead used: the saved generation has the model and configuration it assumed";
                return ahead.plan;
            }
            long t = System.nanoTime();
            Plan again = planning.plan(from, to);
            ahead.outcome = "re-planned in " + (System.nanoTime() - t) / 1_000_000 + " ms: " + differs;
            return again;
        }
    }

    /**
     * A plan around lost workers, reading partner copies too ({@link Planner#plan(Ptc, Ptc, java.util.Map)});
     * never one made ahead (which assumed every worker answers).
     */
    public static Plan around(PlanAhead ahead, Ptc from, Ptc to, Planning planning) {
        if (ahead == null) {
            return planning.plan(from, to);
        }
        synchronized (ahead) {
            if (ahead.plan == null) {
                long t = System.nanoTime();
                ahead.plan = planning.plan(from, to);
                ahead.from = from;
                ahead.to = to;
                ahead.how = planning.how();
                ahead.millis = (System.nanoTime() - t) / 1_000_000;
                ahead.aroundLost = true;
                return ahead.plan;
            }
            long t = System.nanoTime();
            Plan again = planning.plan(from, to);
            ahead.outcome = "re-planned in " + (System.nanoTime() - t) / 1_000_000 + " ms: workers were lost since the "
                    + "plan was made; planned around them";
            return again;
        }
    }

    /** The old configuration the plan was made from, or null (also when planned around lost workers). */
    public synchronized Ptc madeFrom() {
        return plan == null || aroundLost ? null : from;
    }

    /** The new configuration the plan was made for, or null. */
    public synchronized Ptc madeFor() {
        return plan == null ? null : to;
    }

    /** The model as stored with the job, as the change's definition names it (null before planning). */
    public synchronized Model stored() {
        return stored;
    }

    /** Keeps the model as stored with the job (the PTCs carry it as split for their stages). */
    public synchronized void stored(Model m) {
        stored = m;
    }

    private volatile java.util.concurrent.CompletableFuture<Void> describedAhead =
            java.util.concurrent.CompletableFuture.completedFuture(null);

    /** Completes when the model's description was sent ahead to the new placement's daemons ({@code DescriptionsAhead}). */
    public java.util.concurrent.CompletableFuture<Void> describedAhead() {
        return describedAhead;
    }

    public void describedAhead(java.util.concurrent.CompletableFuture<Void> sent) {
        describedAhead = sent;
    }

    /** The plan made, or null. */
    public synchronized Plan madePlan() {
        return plan;
    }

    /** Whether a plan was made (a change whose inputs could not be resolved yet has none). */
    public synchronized boolean planned() {
        return plan != null;
    }

    /** What was planned and how long it took, for the change's events. */
    public synchronized String describe() {
        if (plan == null) {
            return "nothing planned";
        }
        return "planned ahead " + plan.from() + " -> " + plan.to() + " in " + millis + " ms (" + how + ": "
                + plan.shards().size() + " destination shards), before the save";
    }

    /** Whether the plan was used or the change re-planned, and why; "not used yet" before. */
    public String outcome() {
        return outcome;
    }

    /** What differs between the configuration a plan assumed ({@code was}) and the one found ({@code now}), or null. */
    static String differs(String which, Ptc was, Ptc now) {
        String model = differs(was.model(), now.model());
        if (model != null) {
            return "the model differs from the one the plan assumed (" + model + ")";
        }
        if (!was.config().equals(now.config())) {
            return "the " + which + " configuration is " + now.config() + ", the plan assumed " + was.config();
        }
        if (!was.devices().equals(now.devices())) {
            return "the " + which + " configuration's devices are " + now.devices() + ", the plan assumed "
                    + was.devices();
        }
        if (!was.layout().toString().equals(now.layout().toString()) || !sameStages(was.stages(), now.stages())) {
            return "the " + which + " configuration's rank order or pipeline stages differ from the ones the plan assumed";
        }
        return null;
    }

    private static String differs(Model was, Model now) {
        if (was == now) {
            return null;
        }
        if (was.layers() != now.layers()) {
            return now.layers() + " layers, the plan assumed " + was.layers();
        }
        if (was.tensors().size() != now.tensors().size()) {
            return now.tensors().size() + " tensors, the plan assumed " + was.tensors().size();
        }
        for (int i = 0; i < was.tensors().size(); i++) {
            if (!was.tensors().get(i).equals(now.tensors().get(i))) {
                return "tensor " + now.tensors().get(i) + ", the plan assumed " + was.tensors().get(i);
            }
        }
        if (!was.values().equals(now.values()) || !was.ties().equals(now.ties())) {
            return "its non-tensor values or tied tensors differ";
        }
        return null;
    }

    private static boolean sameStages(StageMap a, StageMap b) {
        if (a.stages() != b.stages() || a.layers() != b.layers()) {
            return false;
        }
        for (int s = 0; s < a.stages(); s++) {
            if (a.firstLayer(s) != b.firstLayer(s)) {
                return false;
            }
        }
        return true;
    }
}
