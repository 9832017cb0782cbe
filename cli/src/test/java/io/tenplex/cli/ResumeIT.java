package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same {@code tenplex run} command run again after a SIGINT just after a change: it resumes from
 * the job's newest complete generation under the configuration its ranks load, skips the schedule's
 * entry already applied, raises no stop flag for a step already saved, and ends with every step counted
 * exactly once. A job name used for another schedule is still refused. Real daemon, the packaged
 * {@code tenplex run} as a process, real Python ranks, a real SIGINT.
 */
class ResumeIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final int STEPS = 300;

    @Test
    @Timeout(300)
    void sigintAfterAChange_thenTheSameCommand_resumesAfterTheAppliedEntry(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 1}, {\"step\": 12, \"size\": 2, "
                + "\"tp\": 1, \"pp\": 1, \"dp\": 2}, {\"step\": 250, \"size\": 1}]");
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "127.0.0.1:" + d.address().getPort();
            List<String> cmd = List.of("run", "--addr", addr, "--job", "again", "--schedule", schedule.toString(), "--",
                    "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/resize_rank.py").toString(), out.toString(),
                    ROOT.resolve("clients/python").toString(), Integer.toString(STEPS));
            List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", Path.of(System.getProperty("user.dir")).resolve("target/tenplex.jar").toString(),
                    "io.tenplex.cli.TenplexCli"));
            java.addAll(cmd);
            Process first = new ProcessBuilder(java).redirectErrorStream(true).redirectOutput(dir.resolve("first.out")
                    .toFile()).start();
            try {
                ResizeIT.awaitFile(out.resolve("launch-2-1.json"), first); // the change at step 12 committed; 2 ranks run
                ResizeIT.awaitFile(out.resolve("launch-2-0.json"), first);
                assertEquals(12, ResizeIT.read(out.resolve("launch-2-0.json")).path("loaded").asLong());
                assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(first.pid())).start().waitFor());
                assertTrue(first.waitFor(60, TimeUnit.SECONDS), "tenplex run ended on SIGINT");
            } finally {
                first.destroyForcibly();
            }
            String stopped = Files.readString(dir.resolve("first.out"));
            assertTrue(stopped.contains("change to 2 devices"), stopped);
            Files.delete(out.resolve("launch-2-0.json"));

            String again = CliIT.run(cmd.toArray(String[]::new)); // the same command, in this JVM
            System.out.println(again);
            assertTrue(again.contains("job again has generation 12 (saved under (T,P,D)=(1,1,1)): resuming under "
                    + "(T,P,D)=(1,1,2) from it; 1 schedule entry already applied, next at step 250, change to 1 devices"),
                    again);
            assertFalse(again.contains("at step 12,"), "no stop flag for step 12, saved already: " + again);
            assertEquals(12, ResizeIT.read(out.resolve("launch-2-0.json")).path("loaded").asLong(), "resumed from generation 12");
            JsonNode end = ResizeIT.read(out.resolve("end-1-0.json"));
            assertEquals(STEPS, end.path("step").asInt());
            for (JsonNode w : end.path("w")) {
                assertEquals(STEPS, w.asDouble(), "every step counted exactly once across the stop and the rerun: " + end);
            }
            assertTrue(CliIT.run("jobs", "--addr", addr).lines().anyMatch(l -> l.matches("again +finished .*")));

            // the name used again with another schedule: refused, as before
            Path other = Files.writeString(dir.resolve("o.json"), "[{\"step\": 0, \"size\": 3, \"tp\": 1, \"pp\": 1, "
                    + "\"dp\": 3}]");
            String err = CliIT.runErr(2, "run", "--addr", addr, "--job", "again", "--schedule", other.toString(), "--",
                    "/usr/bin/python3", "-c", "pass");
            assertTrue(err.contains("job again already has generation "), err);
        }
    }
}
