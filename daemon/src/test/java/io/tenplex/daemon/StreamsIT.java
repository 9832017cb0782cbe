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
 * Streamed training samples across three real daemon processes, driven by Python producer and
 * trainer processes (tests/python/test_streams.py): the three policies against their definitions,
 * back-pressure, and re-partitioning at a resize from two to three ranks.
 */
class StreamsIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final List<DaemonProcess> daemons = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    @Test
    void producersAndTrainers_threePolicies_andAResize() throws Exception {
        for (int i = 0; i < 3; i++) {
            daemons.add(DaemonProcess.start("--port", "0", "--bind", "127.0.0.1", "--memory-limit", "64m",
                    "--allow-source-host", "127.0.0.1")); // stream requests name the other daemons
        }
        String addrs = daemons.stream().map(DaemonProcess::url).collect(Collectors.joining(","));
        ProcessBuilder py = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/test_streams.py")
                .toString()).redirectErrorStream(true);
        py.environment().put("TENPLEX_ADDRS", addrs);
        Process p = py.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String logs = daemons.get(0).log().stream().filter(l -> l.contains("stream")).collect(Collectors.joining("\n"));
        assertEquals(0, p.waitFor(), output + "\n" + logs);
        assertTrue(output.strip().endsWith("OK"), output);
    }
}
