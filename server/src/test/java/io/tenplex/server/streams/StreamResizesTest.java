package io.tenplex.server.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.ptc.Device;
import io.tenplex.ptc.ParallelConfig;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StreamResizesTest {
    private static final Map<Integer, InetSocketAddress> DAEMONS = Map.of(
            0, InetSocketAddress.createUnresolved("10.0.0.1", 20010),
            1, InetSocketAddress.createUnresolved("10.0.0.2", 20010));

    private static List<Device> packed(int workers, int perWorker) {
        List<Device> d = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            for (int l = 0; l < perWorker; l++) {
                d.add(new Device(w, l));
            }
        }
        return d;
    }

    @Test
    void dataParallelRanks_followTheWorkerOfTheirFirstRank_inMegatronOrder() {
        // tp 2, dp 2, pp 1 over 2 workers of 2 devices: ranks 0,1 are dp 0 (worker 0), ranks 2,3 dp 1 (worker 1)
        assertEquals(List.of("10.0.0.1:20010", "10.0.0.2:20010"),
                StreamResizes.ranks(ParallelConfig.of(2, 1, 2), packed(2, 2), DAEMONS));
        assertEquals(List.of("10.0.0.1:20010", "10.0.0.1:20010", "10.0.0.2:20010", "10.0.0.2:20010"),
                StreamResizes.ranks(ParallelConfig.of(1, 1, 4), packed(2, 2), DAEMONS));
    }

    @Test
    void aWorkerWithoutADaemon_isAClearError() {
        assertThrows(IllegalStateException.class, () -> StreamResizes.ranks(ParallelConfig.of(1, 1, 3), packed(3, 1),
                DAEMONS));
    }
}
