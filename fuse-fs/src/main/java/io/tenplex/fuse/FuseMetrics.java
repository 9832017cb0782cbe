package io.tenplex.fuse;

import io.prometheus.client.Counter;
import io.prometheus.client.Histogram;

/** FUSE callbacks' Prometheus metrics (the default registry, which the daemon's {@code /metrics} serves). */
final class FuseMetrics {
    static final Counter OPS = Counter.build("tenplex_fuse_operations_total", "FUSE callbacks answered, by operation")
            .labelNames("op").register();
    static final Counter ERRORS = Counter.build("tenplex_fuse_errors_total",
            "FUSE callbacks that answered an error, by operation and errno").labelNames("op", "errno").register();
    static final Histogram SECONDS = Histogram.build("tenplex_fuse_operation_seconds", "Time a FUSE callback took")
            .labelNames("op").buckets(0.00001, 0.0001, 0.001, 0.01, 0.1, 1).register();

    private FuseMetrics() {
    }

    /** Counts one callback that returned {@code result} (a negative errno on error) after {@code nanos}. */
    static int record(String op, int result, long nanos) {
        OPS.labels(op).inc();
        SECONDS.labels(op).observe(nanos / 1e9);
        if (result < 0) {
            ERRORS.labels(op, Integer.toString(-result)).inc();
        }
        return result;
    }
}
