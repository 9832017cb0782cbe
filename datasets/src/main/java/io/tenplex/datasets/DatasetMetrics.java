package io.tenplex.datasets;

import io.prometheus.client.Counter;
import io.prometheus.client.Histogram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dataset mounts' log lines and Prometheus metrics (the default registry, which the daemon's
 * {@code /metrics} serves): mounts, samples loaded by source, and reads that waited for loading.
 */
final class DatasetMetrics {
    private static final Logger LOG = LoggerFactory.getLogger(DatasetService.class);
    static final Counter MOUNTS = Counter.build("tenplex_dataset_mounts_total",
            "Dataset mounts and remounts, by event (mounted, loaded, failed, unmounted)").labelNames("event").register();
    static final Counter SAMPLES = Counter.build("tenplex_dataset_samples_loaded_total",
            "Samples loaded into mounts, by source (previous_mount, peer, source)").labelNames("source").register();
    static final Counter READS = Counter.build("tenplex_dataset_reads_total",
            "Reads of mounted dataset files").register();
    static final Histogram WAITS = Histogram.build("tenplex_dataset_read_wait_seconds",
            "Time reads waited for samples still loading (only reads that waited)")
            .buckets(0.0001, 0.001, 0.01, 0.1, 1, 10, 60).register();

    private DatasetMetrics() {
    }

    /** Every family's series at zero from the start (not only after the first mount). */
    static void atStart() {
        for (String e : new String[] {"mounted", "loaded", "failed", "unmounted"}) {
            MOUNTS.labels(e);
        }
        for (String s : new String[] {"previous_mount", "peer", "source"}) {
            SAMPLES.labels(s);
        }
    }

    static void mounted(DatasetMount m, int peers) {
        MOUNTS.labels("mounted").inc();
        MountInfo i = m.info();
        LOG.info("dataset mounted job={} ranks={} progress={} samples={} bytes={} peers={}", m.job, m.ranks,
                i.progress(), m.totalSamples, m.totalBytes, peers);
    }

    static void settled(DatasetMount m) {
        LoadStatus s = m.load();
        boolean failed = !m.loadError.isEmpty();
        MOUNTS.labels(failed ? "failed" : "loaded").inc();
        LOG.info("dataset {} job={} samples={} bytes={} from_previous={} from_peers={} from_source={} duration_ms={}{}",
                failed ? "loading failed" : "loaded", m.job, s.samplesLoaded(), s.bytesLoaded(), m.fromLocal.get(),
                m.fromPeers.get(), m.fromSource.get(), (System.nanoTime() - m.mountedNanos) / 1_000_000,
                failed ? " error: " + m.loadError : "");
    }

    static void unmounted(String job) {
        MOUNTS.labels("unmounted").inc();
        LOG.info("dataset unmounted job={}", job);
    }
}
