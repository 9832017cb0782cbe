package io.tenplex.adapters;

import io.tenplex.adapters.downtime.RankReport;
import io.tenplex.adapters.downtime.ReportRules;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.GenerationsStatus;
import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which resource changes a rank's downtime report belongs to, and whether each may keep it. A report
 * belongs to every change of its job kept on this daemon that moved its step (the change's generation),
 * and, while a change waits for the ranks' save, to that change when the reporting rank has sealed that
 * step, newer than the generation before the change (a stopped rank reports right after its save, before
 * every rank has saved). Each owner checks it ({@link ReportRules}, and a (rank, phase) once) before any
 * keeps it, so a refused report changes nothing.
 */
final class DowntimeClaims {
    private DowntimeClaims() {
    }

    /**
     * Keeps {@code r} with each change of {@code changes} it belongs to; the caller holds those changes' lock
     * of reports (one report at a time).
     *
     * @return the ids of the changes that kept it
     * @throws StoreException not found: no change of the job moved the step; conflict or too large: see
     *     {@code ChangeReports#check}
     * @throws IllegalArgumentException a rank outside the change's world, a time outside its window
     */
    static List<String> keep(String job, List<ResourceChange> changes, RankReport r, Generations g) {
        Map<ResourceChange, Integer> owners = owners(job, changes, r, g);
        if (owners.isEmpty()) {
            throw StoreException.notFound(noOwner(job, changes, r));
        }
        double now = System.currentTimeMillis() / 1e3;
        owners.forEach((c, oldWorld) -> {
            ReportRules.check(r, c.id(), c.times(), now, oldWorld, c.newWorld());
            c.reports().check(r, c.id());
        });
        List<String> ids = new ArrayList<>();
        owners.forEach((c, oldWorld) -> {
            c.reports().add(r, c.id());
            ids.add(c.id());
        });
        return ids;
    }

    /** The changes {@code r} belongs to, each with its old world (the ranks that saved its step). */
    private static Map<ResourceChange, Integer> owners(String job, List<ResourceChange> changes, RankReport r,
            Generations g) {
        Map<ResourceChange, Integer> owners = new LinkedHashMap<>();
        Integer sealed = null;
        for (ResourceChange c : changes) {
            if (c.generation() >= 0) {
                if (c.generation() == r.step()) {
                    owners.put(c, c.fromWorld());
                }
            } else if (c.awaitsSave(r.step())) {
                sealed = sealed != null ? sealed : sealedWorld(g, job, r);
                if (sealed > 0) {
                    owners.put(c, sealed);
                }
            }
        }
        return owners;
    }

    /** The world of the save of {@code r}'s step when its rank has sealed it (here, or told here), else 0. */
    private static int sealedWorld(Generations g, String job, RankReport r) {
        for (GenerationsStatus.Generation s : g.describe(job).generations()) {
            if (s.step() == r.step() && s.world() != null && s.sealedRanks() != null
                    && s.sealedRanks().contains(r.rank())) {
                return s.world();
            }
        }
        return 0;
    }

    private static String noOwner(String job, List<ResourceChange> changes, RankReport r) {
        StringBuilder b = new StringBuilder("no resource change of job " + job + " moved generation " + r.step()
                + " on this daemon, so rank " + r.rank() + "'s downtime report is not kept; ");
        if (changes.isEmpty()) {
            return b.append("the job has no resource change kept here").toString();
        }
        b.append("its changes kept here:");
        for (ResourceChange c : changes) {
            b.append(' ').append(c.id());
            if (c.generation() >= 0) {
                b.append(" moved generation ").append(c.generation());
            } else if (c.state() == ResourceChange.State.STOPPING) {
                b.append(" waits for a save newer than ").append(c.before() < 0 ? "none" : c.before())
                        .append(" (a stopped rank's report of its save is kept once it sealed that step)");
            } else {
                b.append(" moved no generation");
            }
            b.append(" (").append(c.state().name().toLowerCase(java.util.Locale.ROOT)).append(");");
        }
        return b.substring(0, b.length() - 1);
    }
}
