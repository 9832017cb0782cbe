package io.tenplex.adapters.downtime;

import io.prometheus.client.Histogram;

/**
 * The downtime families of {@code /metrics}: each complete reconfiguration's downtime and its phases
 * (with the wait for the stop step as {@code stop_wait}), observed once per reconfiguration when its last
 * new rank has reported its first step. Registered once per process in the default registry.
 */
public final class DowntimeMetrics {
    private static final double[] SECONDS = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

    public static final Histogram DOWNTIME = Histogram.build("tenplex_reconfiguration_downtime_seconds",
            "A reconfiguration's downtime, from the end of the stop step to the end of the first step under the new "
                    + "configuration").buckets(SECONDS).register();
    public static final Histogram PHASE = Histogram.build("tenplex_reconfiguration_downtime_phase_seconds",
            "The phases of a reconfiguration's downtime (stop_wait: from the change's posting to the stop step, "
                    + "outside the downtime)").labelNames("phase").buckets(SECONDS).register();

    private DowntimeMetrics() {
    }

    /** Makes every series exist at zero (called when a daemon starts). */
    public static void atStart() {
        PHASE.labels("stop_wait");
        for (String p : DowntimeSplit.AFTER_STOP) {
            PHASE.labels(p);
        }
    }

    /** Observes a complete split, once per change. */
    static void record(DowntimeSplit s, ChangeTimes t) {
        if (!s.complete() || s.seconds() == null || !t.firstRecord()) {
            return;
        }
        DOWNTIME.observe(s.seconds());
        if (s.waitForStopSeconds() != null) {
            PHASE.labels("stop_wait").observe(s.waitForStopSeconds());
        }
        s.phases().forEach((p, v) -> PHASE.labels(p).observe(v));
    }

    /**
     * The split of a change that moved generation {@code step}, from the marks its ranks reported for it
     * (null before the step is known or while no rank reported), observed in {@code /metrics} the first
     * time it is complete.
     */
    public static DowntimeSplit split(ChangeReports reports, long step, ChangeTimes t, int newWorld) {
        if (step < 0) {
            return null;
        }
        StepMarks m = reports.of(step);
        if (m.count() == 0) {
            return null;
        }
        DowntimeSplit s = DowntimeSplit.join(m, t, newWorld);
        record(s, t);
        return s;
    }
}
