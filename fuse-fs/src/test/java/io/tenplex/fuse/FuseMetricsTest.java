package io.tenplex.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.prometheus.client.CollectorRegistry;
import org.junit.jupiter.api.Test;

/** Every callback is counted and timed by operation; errors also by errno, and the result passes through. */
class FuseMetricsTest {
    private static double value(String name, String[] labels, String[] values) {
        Double v = CollectorRegistry.defaultRegistry.getSampleValue(name, labels, values);
        return v == null ? 0 : v;
    }

    @Test
    void record_countsOperations_andErrorsByErrno() {
        String[] op = {"op"};
        double reads = value("tenplex_fuse_operations_total", op, new String[] {"test_read"});
        assertEquals(4096, FuseMetrics.record("test_read", 4096, 1_000));
        assertEquals(-FsLogic.EIO, FuseMetrics.record("test_read", -FsLogic.EIO, 2_000));
        assertEquals(reads + 2, value("tenplex_fuse_operations_total", op, new String[] {"test_read"}));
        assertEquals(1, value("tenplex_fuse_errors_total", new String[] {"op", "errno"},
                new String[] {"test_read", Integer.toString(FsLogic.EIO)}));
        assertEquals(2, value("tenplex_fuse_operation_seconds_count", op, new String[] {"test_read"}));
    }
}
