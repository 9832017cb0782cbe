package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
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
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final List<DaemonProcess> daemons = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    @Test
    void resourceChange_twoToThreeRanks_repartitionsEveryPolicysBuffers() throws Exception {
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(3);
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3",
                ROOT.resolve("tests/python/stream_resize.py").toString()));
        for (int w = 0; w < 3; w++) {
            daemons.add(DaemonProcess.start("--port", peers.port(w), "--bind", "127.0.0.1", "--memory-limit", "64m",
                    "--peers", peers.arg()));
            cmd.add(daemons.get(w).url());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.println(out);
        String logs = daemons.get(0).log().stream().filter(l -> l.contains("stream") || l.contains("resource"))
                .collect(Collectors.joining("\n"));
        assertEquals(0, p.waitFor(), out + "\n" + logs);
        assertTrue(out.strip().endsWith("OK"), out);
    }
}
