package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.reconfigure.JobModels;
import io.tenplex.jobs.reconfigure.PlanAhead;
import io.tenplex.jobs.reconfigure.Rebuilding;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.jobs.recovery.Recovery;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import java.io.IOException;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Planning a reconfiguration: its source (the generation the request names, else the job's current
 * one, else the save), the configuration and model that source was saved with, and the plan, made
 * around lost workers when a level beyond memory holds their ranks. Planning that runs out of heap
 * is {@code TOO_LARGE}. It runs on the caller's thread.
 */
final class ReconfigurationPlanner {
    /** A plan with its source; {@code origins}: where each old rank is read when recovering (else empty). */
    record Planned(Plan plan, Ptc from, String sourceDir, long step, Map<Integer, String> origins,
            Rebuilding rebuilding, io.tenplex.jobs.reconfigure.Reconfiguration.Defined defined) {
        Planned(Plan plan, Ptc from, String sourceDir, long step, Map<Integer, String> origins) {
            this(plan, from, sourceDir, step, origins, Rebuilding.NONE, null);
        }
    }

    private final Generations generations;
    private final JobModels models;
    private final Recovery recovery;
    private final ClusterDefaults cluster;

    ReconfigurationPlanner(Generations generations, JobModels models, Recovery recovery, ClusterDefaults cluster) {
        this.generations = generations;
        this.models = models;
        this.recovery = recovery;
        this.cluster = cluster;
    }

    /** Plans a reconfiguration without starting it. */
    Jobs.DryRun dryRun(ReconfigureRequest r) throws IOException {
        Planned p = plan(r, true, null, true); // the whole change's plan, though every daemon plans its own
        Plan plan = p.plan();
        return new Jobs.DryRun(plan.from().toString(), plan.to().toString(), new JobLayout(r.job(), p.sourceDir(), "load").source().toString(),
                plan.shards().size(), plan.report().toString(), plan.toString().lines().limit(40).toList(),
                p.origins().isEmpty() ? null : p.origins());
    }

    /** Plans before the state is saved (nothing stored or started), to be reused when the change starts. */
    PlanAhead planAhead(ReconfigureRequest r) throws IOException {
        PlanAhead ahead = new PlanAhead();
        plan(r, true, ahead);
        return ahead;
    }

    /** As {@link #planInHeap}; planning that runs out of heap is {@code TOO_LARGE} (its tables are dropped by then). */
    Planned plan(ReconfigureRequest r, boolean dry, PlanAhead ahead) throws IOException {
        return plan(r, dry, ahead, false);
    }

    /** @param whole plan the whole change even when every daemon plans its own part (a dry run shows it) */
    private Planned plan(ReconfigureRequest r, boolean dry, PlanAhead ahead, boolean whole) throws IOException {
        try {
            return planInHeap(r, dry, ahead, whole);
        } catch (OutOfMemoryError e) {
            throw io.tenplex.jobs.reconfigure.PlanHeap.planning(r.job(), r.to(), e);
        }
    }

    /** @param dry only to plan: a lost worker's durable copy is looked at, not read; @param ahead to reuse or fill, or null */
    private Planned planInHeap(ReconfigureRequest r, boolean dry, PlanAhead ahead, boolean whole) throws IOException {
        Model model = r.modelSpec() != null ? models.store(r.job(), r.modelSpec())
                : models.stored(r.job(), cluster.daemons(r.daemons()), !dry, r.to());
        String sourceDir = "save";
        long step = r.step().orElse(0);
        JsonNode fromConfig = r.from();
        OptionalLong generation = r.generation().isPresent() ? r.generation() : r.fromSave() ? OptionalLong.empty()
                : generations.current(r.job());
        if (generation.isPresent()) {
            long g = generation.getAsLong();
            sourceDir = Generations.sourceDir(g);
            step = r.step().orElse(g);
            if (fromConfig == null) {
                fromConfig = generations.config(r.job(), g);
                if (fromConfig == null) {
                    throw new IllegalArgumentException("generation " + g + " of job " + r.job()
                            + " was saved without a configuration; give \"from\"");
                }
            }
        }
        Ptc from = ConfigJson.source(model, fromConfig == null ? com.fasterxml.jackson.databind.node.MissingNode
                .getInstance() : fromConfig);
        Ptc to = ConfigJson.target(model, r.to());
        if (ahead != null) {
            ahead.stored(model);
        }
        if (generation.isPresent() && recovery.recoverable(r.job())) {
            Recovery.Sources around = recovery.aroundLost(r, model, generation.getAsLong(), from, to, dry,
                    cluster.daemons(r.daemons()), cluster.selfWorker());
            if (around != null) {
                Map<Integer, String> origins = new java.util.TreeMap<>();
                around.sources().origins().forEach((rank, o) -> origins.put(rank, o.toString()));
                Ptc placed = around.sources().from();
                Map<Integer, java.util.List<Integer>> copies = around.sources().copies();
                return new Planned(PlanAhead.around(ahead, placed, to, planning(r, whole, copies)), placed,
                        around.sources().sourceDir(), around.step(), origins,
                        new Rebuilding(around.sources().rebuilt(), around.sources().rebuilding(),
                                (rank, level) -> around.sources().origins().get(rank).from(level).toString(),
                                around.sources().release()), defined(model, to, copies));
            }
        }
        // planned by every daemon: here only this daemon's own part, for the whole change's report
        Plan plan = PlanAhead.plan(ahead, from, to, planning(r, whole, Map.of()));
        return new Planned(plan, from, sourceDir, step, Map.of(), Rebuilding.NONE, defined(model, to, Map.of()));
    }

    /**
     * The whole change for a dry run (it shows every shard) or Tenplex-Central (the coordinator sends
     * the parts); else only this daemon's own part of it (the first new worker's when it has none),
     * enough for the whole change's report and for taking its memory ahead, since every daemon plans
     * its own.
     */
    private PlanAhead.Planning planning(ReconfigureRequest r, boolean whole, Map<Integer, java.util.List<Integer>> copies) {
        if (whole || !r.plannedLocally()) {
            return new PlanAhead.Planning("the whole change", (f, t) -> io.tenplex.transform.Planner.plan(f, t, copies));
        }
        return new PlanAhead.Planning("this daemon's own part", (f, t) -> io.tenplex.transform.LocalPlanner.planFor(f, t,
                copies, ownWorker(t)));
    }

    /** This daemon's worker when {@code to} places ranks on it, else the first new worker. */
    private int ownWorker(Ptc to) {
        java.util.OptionalInt self = cluster.selfWorker();
        if (self.isPresent() && to.devices().stream().anyMatch(d -> d.worker() == self.getAsInt())) {
            return self.getAsInt();
        }
        return to.device(0).worker();
    }

    private static io.tenplex.jobs.reconfigure.Reconfiguration.Defined defined(Model model, Ptc to,
            Map<Integer, java.util.List<Integer>> copies) {
        return new io.tenplex.jobs.reconfigure.Reconfiguration.Defined(model, new ConfigJson.Placed(to.config(),
                to.devices()), copies);
    }
}
