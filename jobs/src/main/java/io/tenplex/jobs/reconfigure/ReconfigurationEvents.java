package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.generations.JobMetrics;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A coordinated reconfiguration's log lines and metrics: its start, each phase, and its end. */
public final class ReconfigurationEvents {
    private static final Logger LOG = LoggerFactory.getLogger(Reconfiguration.class);

    private ReconfigurationEvents() {
    }

    static void started(Reconfiguration r) {
        ReconfigurationStatus s = r.describe();
        LOG.info("reconfiguration started job={} plan={} from={} to={} mode={}", s.job(), s.plan(), s.from(), s.to(),
                s.mode().replace(' ', '_'));
    }

    public static void modelInferred(String job, io.tenplex.ptc.Model m) {
        LOG.info("model inferred from saved shards job={} tensors={} layers={}", job, m.tensors().size(), m.layers());
    }

    static void phase(Reconfiguration r, String phase, long millis) {
        JobMetrics.RECONFIGURATION_PHASE.labels(phase).observe(millis / 1e3);
        LOG.info("reconfiguration phase job={} plan={} phase={} duration_ms={}", r.job(), r.id(), phase, millis);
    }

    /** Counts a finished reconfiguration and, when it committed, the bytes its plan moved. */
    static void finished(Reconfiguration r, long startedNanos) {
        String outcome = r.state().name().toLowerCase(Locale.ROOT);
        JobMetrics.RECONFIGURATIONS.labels(outcome).inc();
        ReconfigurationStatus.Report p = r.describe().report();
        long ms = (System.nanoTime() - startedNanos) / 1_000_000;
        if (r.state() == Reconfiguration.State.COMMITTED) {
            JobMetrics.RECONFIGURATION_BYTES.labels("on_device").inc(p.onDeviceBytes());
            JobMetrics.RECONFIGURATION_BYTES.labels("within_worker").inc(p.intraWorkerBytes());
            JobMetrics.RECONFIGURATION_BYTES.labels("between_workers").inc(p.interWorkerBytes());
            JobMetrics.RECONFIGURATION_BYTES.labels("lower_bound").inc(p.lowerBoundBytes());
            LOG.info("reconfiguration committed job={} plan={} duration_ms={} bytes_on_device={} bytes_within_workers={} "
                    + "bytes_between_workers={} lower_bound_bytes={}", r.job(), r.id(), ms, p.onDeviceBytes(),
                    p.intraWorkerBytes(), p.interWorkerBytes(), p.lowerBoundBytes());
        } else {
            LOG.warn("reconfiguration {} job={} plan={} duration_ms={} error={}", outcome, r.job(), r.id(), ms,
                    r.error());
        }
    }
}
