package io.tenplex.jobs.recovery;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.transform.Plan;
import io.tenplex.transform.PlanReport;
import io.tenplex.transform.Planner;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Balances a recovery's reads over every holder of a copy: a rank whose tree a survivor also keeps
 * as a complete partner copy (L2) may be read there instead of where it is placed, which moves its
 * bytes off a busy link (a survivor that needs a rank it keeps a copy of reads it locally). Starting
 * from the placement found, each rank in turn is tried on each other holder of a copy, and the move
 * is kept when the plan's busiest link (the most bytes one worker sends or receives) gets lighter;
 * until no move helps or the planning budget is spent. Plans are compared by their reports only.
 */
final class CopyRoutes {
    /** At most this many plans are made to compare routes. */
    static final int MAX_PLANS = 48;
    /** Routes are not searched when a plan would have more shards than this (planning time). */
    static final long MAX_SHARDS = 200_000;

    private CopyRoutes() {
    }

    /**
     * @param s the sources found (every rank placed once)
     * @param copies per rank, the surviving workers that keep a complete copy of it
     * @param spare the first device number no worker uses (a copy read elsewhere gets device {@code spare + rank})
     */
    static Survivors.Sources balance(Survivors.Sources s, Ptc to, Map<Integer, List<Integer>> copies, int spare) {
        if (copies.isEmpty() || (long) to.worldSize() * to.model().tensors().size() > MAX_SHARDS) {
            return s;
        }
        List<Device> devices = new ArrayList<>(s.from().devices());
        long best = busiest(plan(s.from(), devices, to));
        int plans = 1;
        boolean moved = true;
        while (moved && plans < MAX_PLANS) {
            moved = false;
            for (Map.Entry<Integer, List<Integer>> e : copies.entrySet()) {
                int rank = e.getKey();
                for (int w : e.getValue()) {
                    if (plans >= MAX_PLANS || devices.get(rank).worker() == w) {
                        continue;
                    }
                    List<Device> trial = new ArrayList<>(devices);
                    trial.set(rank, new Device(w, spare + rank));
                    long load = busiest(plan(s.from(), trial, to));
                    plans++;
                    if (load < best) {
                        best = load;
                        devices = trial;
                        moved = true;
                    }
                }
            }
        }
        return withDevices(s, devices);
    }

    /** The sources with ranks read where {@code devices} says; a rank read from a copy says so. */
    private static Survivors.Sources withDevices(Survivors.Sources s, List<Device> devices) {
        Ptc from = s.from();
        Map<Integer, Survivors.Origin> origins = new TreeMap<>(s.origins());
        for (int r = 0; r < devices.size(); r++) {
            if (devices.get(r).equals(from.device(r))) {
                continue;
            }
            Survivors.Origin was = s.origins().get(r);
            origins.put(r, new Survivors.Origin(devices.get(r).worker(), Survivors.PARTNER,
                    was.level().equals(Survivors.MEMORY) ? -1 : was.lostWorker()));
        }
        return new Survivors.Sources(new Ptc(from.model(), from.config(), from.layout(), from.stages(), devices),
                s.sourceDir(), origins);
    }

    private static Plan plan(Ptc from, List<Device> devices, Ptc to) {
        return Planner.plan(new Ptc(from.model(), from.config(), from.layout(), from.stages(), devices), to);
    }

    /** The most bytes one worker sends or receives across workers. */
    static long busiest(Plan p) {
        PlanReport r = p.report();
        long most = r.maxSent();
        for (long b : r.receivedByWorker().values()) {
            most = Math.max(most, b);
        }
        return most;
    }
}
