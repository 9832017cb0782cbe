package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code tenplex run} without a schedule (a static job of {@code --nproc-per-node} ranks, the torchrun
 * flag) resized twice from the command line with {@code tenplex resize}: each resize is followed to its
 * commit, the run relaunches its ranks under the new configuration, and the state continues exactly
 * (every step counted once). Real daemon, the packaged {@code tenplex run} as a process, real Python
 * ranks.
 */
class ResizeIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final int STEPS = 300;

    @Test
    @Timeout(300)
    void runWithoutASchedule_isResizedTwice_andContinuesExactly(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "127.0.0.1:" + d.address().getPort();
            Path jar = Path.of(System.getProperty("user.dir")).resolve("target/tenplex.jar");
            Process run = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    jar.toString(), "io.tenplex.cli.TenplexCli", "run", "--addr", addr, "--job", "rz", "--nproc-per-node",
                    "1", "--nnodes", "1", "--", "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/resize_rank.py")
                    .toString(), out.toString(), ROOT.resolve("clients/python").toString(), Integer.toString(STEPS))
                    .redirectErrorStream(true).redirectOutput(dir.resolve("run.out").toFile()).start();
            try {
                awaitFile(out.resolve("launch-1-0.json"), run);
                String up = CliIT.run("resize", "--addr", addr, "rz", "--tp", "1", "--pp", "1", "--dp", "2");
                assertTrue(up.contains("] done: generation "), up);
                awaitFile(out.resolve("launch-2-1.json"), run);
                awaitFile(out.resolve("launch-2-0.json"), run); // each rank writes its own, in no order
                // two ranks without a process group ask the flag each at its own step: a step ahead of both
                long ahead = read(out.resolve("launch-2-0.json")).path("loaded").asLong() + 150;
                String down = CliIT.run("resize", "--addr", addr, "rz", "--size", "1", "--at-step", Long.toString(ahead));
                assertTrue(down.contains("] done: generation "), down);
                assertTrue(run.waitFor(120, TimeUnit.SECONDS), "tenplex run ended");
                String text = Files.readString(dir.resolve("run.out"));
                assertEquals(0, run.exitValue(), text);
                assertTrue(text.contains("(tenplex resize): following it"), text);
                assertTrue(text.contains("tenplex run: 2 reconfiguration(s)"), text);
                for (int r = 0; r < 2; r++) {
                    assertTrue(read(out.resolve("launch-2-" + r + ".json")).path("loaded").asLong() > 0, "rank " + r
                            + " of the second launch loaded a saved step");
                }
                JsonNode end = read(out.resolve("end-1-0.json"));
                assertEquals(STEPS, end.path("step").asInt());
                for (JsonNode w : end.path("w")) {
                    assertEquals(STEPS, w.asDouble(), "every step counted exactly once across the two resizes: " + end);
                }
                String jobs = CliIT.run("jobs", "--addr", addr);
                assertTrue(jobs.lines().anyMatch(l -> l.matches("rz +finished .*")), jobs);
            } finally {
                run.destroyForcibly();
                run.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void badOptions_areRefused_beforeAnythingIsPosted() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "127.0.0.1:" + d.address().getPort();
            String[][] args = {{"--tp", "2"}, {"--size", "0"}, {}, {"--size", "3", "--tp", "1", "--pp", "1", "--dp", "2"}};
            String[] said = {"give all of --tp, --pp and --dp", "the new size must be >= 1", "give --size N",
                "--tp*--pp*--dp = 2 but --size is 3"};
            for (int i = 0; i < args.length; i++) {
                java.io.StringWriter err = new java.io.StringWriter();
                CommandLine cl = TenplexCli.commandLine();
                cl.setErr(new java.io.PrintWriter(err));
                String[] cmd = new String[args[i].length + 4];
                System.arraycopy(new String[] {"resize", "--addr", addr, "j"}, 0, cmd, 0, 4);
                System.arraycopy(args[i], 0, cmd, 4, args[i].length);
                assertEquals(2, cl.execute(cmd), err.toString());
                assertTrue(err.toString().contains(said[i]), err.toString());
            }
        }
    }

    /** Polls (up to 120 s, while {@code run} lives) until {@code f} holds something. */
    static void awaitFile(Path f, Process run) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!Files.exists(f) || Files.size(f) == 0) {
            assertTrue(run.isAlive() && System.nanoTime() < deadline, f + " never appeared");
            LockSupport.parkNanos(20_000_000L);
        }
    }

    static JsonNode read(Path f) throws Exception {
        return TenplexCli.JSON.readTree(f.toFile());
    }
}
