package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tenplex run --max-restarts} with a real daemon and real Python ranks: when a rank fails,
 * every rank is ended and relaunched, and they resume from the last complete generation; without
 * restarts left the run fails with the rank's exit status reported.
 */
class RunRestartIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    @Test
    void failedRank_restartsAllRanks_fromTheLastCompleteGeneration(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2}]");
        Path rank = ROOT.resolve("cli/src/test/resources/restart_rank.py");
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String text = CliIT.run(0, "run", "--addr", "127.0.0.1:" + d.address().getPort(), "--job", "r",
                    "--max-restarts", "2", "--schedule", schedule.toString(), "--", "/usr/bin/python3", rank.toString(),
                    out.toString(), ROOT.resolve("clients/python").toString());
            assertTrue(text.contains("a training process failed (exit 3); restarting all 2 processes from generation 3 "
                    + "(restart 1 of 2)"), text);
            assertFalse(text.contains("restart 2 of 2"), text);
            String jobs = CliIT.run("jobs", "--addr", "127.0.0.1:" + d.address().getPort());
            assertTrue(jobs.lines().anyMatch(l -> l.matches("r +finished +3 .*")), jobs);
        }
        for (int r = 0; r < 2; r++) {
            JsonNode first = TenplexCli.JSON.readTree(out.resolve("rank-" + r + "-1.json").toFile());
            JsonNode second = TenplexCli.JSON.readTree(out.resolve("rank-" + r + "-2.json").toFile());
            assertEquals(0, first.path("loaded").asInt());
            assertEquals(3, second.path("loaded").asInt(), "rank " + r + " resumed from generation 3");
            assertEquals(3.0, second.path("w").get(0).asDouble());
            assertFalse(Files.exists(out.resolve("rank-" + r + "-3.json")));
        }
    }

    @Test
    void noRestartsLeft_failsWithTheRanksStatus(@TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2}]");
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String text = CliIT.run(1, "run", "--addr", "127.0.0.1:" + d.address().getPort(), "--job", "f",
                    "--max-restarts", "1", "--schedule", schedule.toString(), "--", "/bin/sh", "-c", "exit 5");
            assertTrue(text.contains("exit 5); restarting all 2 processes from the start (no complete generation "
                    + "yet) (restart 1 of 1)"), text);
            assertTrue(text.contains("a training process failed (exit 5); stopping"), text);
            String jobs = CliIT.run("jobs", "--addr", "127.0.0.1:" + d.address().getPort());
            assertTrue(jobs.lines().anyMatch(l -> l.matches("f +failed .* a training process failed \\(exit 5\\); "
                    + "stopping")), jobs);
        }
    }
}
