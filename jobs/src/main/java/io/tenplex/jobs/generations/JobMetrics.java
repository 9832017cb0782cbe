package io.tenplex.jobs.generations;

import io.prometheus.client.Counter;
import io.prometheus.client.Gauge;
import io.prometheus.client.Histogram;

/**
 * The job lifecycle's Prometheus metrics: saves, generations, stop flags, reconfigurations and
 * resource changes. Registered once per process in the default registry, which the daemon's
 * {@code /metrics} serves (one daemon per process; daemons sharing a test JVM share them).
 */
public final class JobMetrics {
    private static final double[] SECONDS = {0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300};

    public static final Counter SAVES = Counter.build("tenplex_saves_total", "Ranks sealed into a generation here")
            .register();
    public static final Counter SAVE_BYTES = Counter.build("tenplex_save_bytes_total", "Bytes of the ranks sealed here")
            .register();
    public static final Histogram SAVE_STALL = Histogram.build("tenplex_save_stall_seconds",
            "Time a rank's seal took (training waits for it)").buckets(SECONDS).register();
    public static final Counter GENERATIONS = Counter.build("tenplex_generations_total",
            "Generations completed (every rank sealed) or dropped here").labelNames("event").register();
    public static final Histogram SAVE_SIZE = Histogram.build("tenplex_save_size_bytes",
            "Size of each rank sealed here").exponentialBuckets(1 << 20, 4, 10).register();
    public static final Counter STOP_FLAGS = Counter.build("tenplex_stop_flags_raised_total",
            "Stop flags raised on this daemon").register();
    public static final Gauge STOP_FLAGS_UP = Gauge.build("tenplex_stop_flags_active",
            "Jobs whose stop flag is raised now").register();
    public static final Counter RECONFIGURATIONS = Counter.build("tenplex_reconfigurations_total",
            "Reconfigurations coordinated here, by outcome (committed, aborted)").labelNames("outcome").register();
    public static final Histogram RECONFIGURATION_PHASE = Histogram.build("tenplex_reconfiguration_phase_seconds",
            "Duration of a reconfiguration's phases (check, central, execute, commit, abort)").labelNames("phase")
            .buckets(SECONDS).register();
    public static final Counter RECONFIGURATION_BYTES = Counter.build("tenplex_reconfiguration_bytes_total",
            "Bytes the committed plans moved: within a device or worker (on_device, within_worker), between "
                    + "workers (between_workers), and the least any plan must move between workers (lower_bound)")
            .labelNames("kind").register();
    public static final Counter RESOURCE_CHANGES = Counter.build("tenplex_resource_changes_total",
            "Resource changes by state reached (requested, done, failed, cancelled)").labelNames("state").register();

    private JobMetrics() {
    }

    /**
     * Makes every family's series exist at zero (called when a daemon starts), so that dashboards and
     * {@code absent()} alerts see the families before the first save, generation or reconfiguration.
     */
    public static void atStart() {
        for (String e : new String[] {"completed", "dropped"}) {
            GENERATIONS.labels(e);
        }
        for (String o : new String[] {"committed", "aborted"}) {
            RECONFIGURATIONS.labels(o);
        }
        for (String p : new String[] {"check", "central", "execute", "commit", "abort"}) {
            RECONFIGURATION_PHASE.labels(p);
        }
        for (String k : new String[] {"on_device", "within_worker", "between_workers", "lower_bound"}) {
            RECONFIGURATION_BYTES.labels(k);
        }
        for (String s : new String[] {"requested", "done", "failed", "cancelled"}) {
            RESOURCE_CHANGES.labels(s);
        }
    }
}
