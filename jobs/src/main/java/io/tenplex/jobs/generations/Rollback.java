package io.tenplex.jobs.generations;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PlanPart;

/**
 * After a reconfiguration that moved generation {@code s} commits on a daemon, the job's state is
 * generation {@code s}: any newer generation this daemon holds (a recovery that had to go back to
 * an older generation, or a reconfiguration asked for an older one) is superseded, so the job's next
 * saves of those steps, in the new configuration, are not refused and a load never picks the
 * abandoned one.
 */
public final class Rollback {
    private Rollback() {
    }

    public static void after(Generations generations, PlanPart part) {
        long s = sourceStep(part.sourceDir());
        if (s < 0) {
            return;
        }
        for (GenerationsStatus.Generation g : generations.describe(part.job()).generations()) {
            if (g.step() > s) {
                generations.supersede(part.job(), g.step(), s);
            }
        }
    }

    /** The step of a generation or replica source directory ({@code generations/10}, {@code replicas/10}), or -1. */
    static long sourceStep(String sourceDir) {
        for (String prefix : new String[] {Generations.DIR + "/", "replicas/"}) {
            String rest = sourceDir == null || !sourceDir.startsWith(prefix) ? "" : sourceDir.substring(prefix.length());
            java.util.OptionalLong step = JobLayout.step(rest);
            if (step.isPresent()) {
                return step.getAsLong();
            }
        }
        return -1;
    }
}
