package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Streamed-sample buffers across a real resource change: three tenplexd processes (one per worker,
 * started with {@code --peers}), Python producer and trainer processes, and a {@code POST
 * .../resources} from two data-parallel ranks to three that the trainers stop for through the stop
 * flag and save (tests/python/stream_resize.py says what is checked): the commit re-partitions the
 * buffers, and with FIFO and FIRO every sample is read exactly once across the change, with Reservoir
 * none is lost.
 */
class StreamResizeIT {
    @Test
    void resourceChange_twoToThreeRanks_repartitionsEveryPolicysBuffers() throws Exception {
        try (PeerDaemons c = PeerDaemons.start(3, "--bind", "127.0.0.1", "--memory-limit", "64m")) {
            PeerDaemons.Driver d = c.run("stream_resize.py");
            String logs = c.daemons.get(0).log().stream().filter(l -> l.contains("stream") || l.contains("resource"))
                    .collect(Collectors.joining("\n"));
            assertEquals(0, d.exit(), d.out() + "\n" + logs);
            assertTrue(d.out().strip().endsWith("OK"), d.out());
        }
    }
}
