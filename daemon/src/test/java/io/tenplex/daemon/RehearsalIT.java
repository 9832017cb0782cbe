package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The distributed rehearsal buffer with four tenplexd processes (one per worker, started with
 * {@code --peers}) and Python trainer processes (tests/python/rehearsal_cluster.py, which says what
 * is checked): global sampling is unbiased by a chi-square test that two deliberately biased samplers
 * fail, and the buffer survives a resource change from four data-parallel ranks to two.
 */
class RehearsalIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private final List<DaemonProcess> daemons = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
    }

    @Test
    void rehearsalBuffer_fourDaemons_unbiasedGlobalSampling_survivesAResize() throws Exception {
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(4);
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3",
                ROOT.resolve("tests/python/rehearsal_cluster.py").toString()));
        for (int w = 0; w < 4; w++) {
            daemons.add(DaemonProcess.start("--port", peers.port(w), "--memory-limit", "128m", "--peers",
                    peers.arg()));
            cmd.add(daemons.get(w).url());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.println(out);
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.strip().endsWith("OK"), out);
    }
}
