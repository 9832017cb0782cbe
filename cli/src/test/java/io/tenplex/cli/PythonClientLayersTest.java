package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The Python client's layering (tests/python/test_layers.py): every module of clients/python/tenplex in
 * its layer (entry points, launchers, the training API, the wire, tools, errors), importing only the
 * layers below it, without an import circle, and none over 400 lines. The script also checks that its
 * checker finds each kind of breach in a made-up client. The Python side of jobs/import-control.xml.
 */
class PythonClientLayersTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    @Test
    void pythonClient_importsFollowItsLayers() throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/test_layers.py").toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.strip().endsWith("OK"), out);
    }
}
