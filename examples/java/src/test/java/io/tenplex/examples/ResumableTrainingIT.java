package io.tenplex.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.client.TenplexClient;
import io.tenplex.client.Tensor;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The example against a real daemon on loopback: a first start, then a run that resumes from its save. */
class ResumableTrainingIT {
    @Test
    void aSecondRun_resumesFromTheFirstRunsCheckpoint() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            TenplexClient c = new TenplexClient("http://127.0.0.1:" + d.address().getPort(), null);
            ByteArrayOutputStream first = new ByteArrayOutputStream();
            assertEquals(5, ResumableTraining.run(c, "ex", 0, 1, 5, 5, new PrintStream(first, true, StandardCharsets.UTF_8)));
            assertTrue(first.toString(StandardCharsets.UTF_8).startsWith("first start (nothing to load for rank 0 of job ex"),
                    first.toString(StandardCharsets.UTF_8));

            ByteArrayOutputStream second = new ByteArrayOutputStream();
            assertEquals(8, ResumableTraining.run(c, "ex", 0, 1, 8, 5, new PrintStream(second, true, StandardCharsets.UTF_8)));
            String out = second.toString(StandardCharsets.UTF_8);
            assertTrue(out.startsWith("resumed job ex rank 0 at step 5"), out);
            assertTrue(out.contains("step 6 loss ") && !out.contains("step 5 loss"), out);

            float[] w = {1f, -1f, 0.5f, 2f};
            for (int s = 0; s < 8; s++) {
                for (int i = 0; i < w.length; i++) {
                    w[i] -= 0.1f * w[i];
                }
            }
            Tensor saved = (Tensor) c.loadRank("ex", 0).get("w");
            assertArrayEquals(w, ResumableTraining.floats(saved));
        }
    }
}
