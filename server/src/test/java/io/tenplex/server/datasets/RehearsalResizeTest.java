package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The rehearsal buffer's commit listener on jobs that have no buffer: a daemon alone (no peers, no
 * buffer of the job) has nothing to re-partition and says nothing, even when the change names no
 * daemon addresses (what every {@code tenplex run} against one daemon does); with peers that may hold
 * a buffer, a worker without an address stays a clear error.
 */
class RehearsalResizeTest {
    private static final List<Device> FOUR = List.of(new Device(0, 0), new Device(0, 1), new Device(0, 2),
            new Device(0, 3));

    @Test
    void aJobWithoutARehearsalBuffer_onADaemonWithoutPeers_isLeftAlone() throws Exception {
        RehearsalService service = new RehearsalService(null, 1 << 20);
        RehearsalResize resize = new RehearsalResize(service, Map::of);
        assertNull(resize.committed("gpt", ParallelConfig.of(1, 1, 4), FOUR, Map.of()));
    }

    @Test
    void withPeers_aWorkerWithoutADaemonAddress_isAClearError() {
        RehearsalService service = new RehearsalService(null, 1 << 20);
        service.setPeers(() -> List.of("10.0.0.2:20010"));
        RehearsalResize resize = new RehearsalResize(service, Map::of);
        var e = assertThrows(IllegalArgumentException.class,
                () -> resize.committed("gpt", ParallelConfig.of(1, 1, 4), FOUR, Map.of()));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("no daemon address for worker 0"),
                e.getMessage());
    }
}
