package io.tenplex.jobs;

import io.tenplex.jobs.generations.JobMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A save's log line and metrics: a rank sealed here, its bytes, and how long training waited. */
final class SaveEvents {
    private static final Logger LOG = LoggerFactory.getLogger(Jobs.class);

    private SaveEvents() {
    }

    static void sealed(String job, long step, int rank, long bytes, long nanos) {
        JobMetrics.SAVES.inc();
        JobMetrics.SAVE_BYTES.inc(bytes);
        JobMetrics.SAVE_STALL.observe(nanos / 1e9);
        JobMetrics.SAVE_SIZE.observe(bytes);
        LOG.info("save job={} step={} rank={} bytes={} duration_ms={}", job, step, rank, bytes, nanos / 1_000_000);
    }
}
