package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A run whose schedule was not fully applied exits {@link RunCli#NOT_APPLIED} and names each entry it
 * did not apply and why, read from the stop flag's asks: an unmodified script that never asks the stop
 * flag (it trains every step on the first size), one that ends before the change's step. Real daemon,
 * real Python ranks, relaunch and live mode.
 */
class ScheduleAppliedIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** A training script that never asks the stop flag: ten steps, then it exits 0. */
    private static final String UNMODIFIED = "import time\nfor step in range(10):\n    time.sleep(0.05)\n";

    @ParameterizedTest(name = "live={0}")
    @ValueSource(booleans = {false, true})
    void scriptThatNeverAsks_exits3_andNamesEveryEntryNotApplied(boolean live, @TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 2}, {\"step\": 5, \"size\": 1, \"tp\": 1, \"pp\": 1, \"dp\": 1}, {\"step\": 8, \"size\": 0}]");
        String text = run(dir, "never" + live, schedule, live, "-c", UNMODIFIED);
        assertTrue(text.contains("tenplex run: 2 schedule entries not applied (exit 3):"), text);
        assertTrue(text.contains("  at step 5, change to 1 devices as (T,P,D)=(1,1,1): " + (live
                ? "the ranks ended without forming the live process group tenplex/launch/1: does the script use "
                + "tenplex.elastic" : "the ranks ended and no rank asked the stop flag since it was raised: does the "
                + "script call tenplex.should_stop(job, step) before each step")), text);
        assertTrue(text.contains("  at step 8, stop: the job had ended"), text);
    }

    @Test
    void stopEntryTheScriptNeverAsks_exits3(@TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 1}, {\"step\": 5, \"size\": 0}]");
        String text = run(dir, "stopnever", schedule, false, "-c", UNMODIFIED);
        assertTrue(text.contains("tenplex run: 1 schedule entry not applied (exit 3):"), text);
        assertTrue(text.contains("  at step 5, stop: the ranks ended and no rank asked the stop flag"), text);
    }

    @Test
    void scriptThatAsksButEndsFirst_exits3_withTheLastStepAsked(@TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 1}, {\"step\": 30, \"size\": 2, "
                + "\"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        String asks = "import os, sys\nsys.path.insert(0, " + py(ROOT.resolve("clients/python")) + ")\nimport tenplex\n"
                + "for step in range(4):\n    assert not tenplex.should_stop(os.environ['TENPLEX_JOB'], step)\n";
        String text = run(dir, "asks", schedule, false, "-c", asks);
        assertTrue(text.contains("  at step 30, change to 2 devices as (T,P,D)=(1,1,2): the ranks ended after step 3, "
                + "before step 30"), text);
        assertFalse(text.contains("no rank asked"), text);
    }

    /** tenplex run of {@code /usr/bin/python3 ARGS} under {@code schedule}; it must exit 3. */
    private static String run(Path dir, String job, Path schedule, boolean live, String... args) throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            List<String> cmd = new ArrayList<>(List.of("run", "--addr", "127.0.0.1:" + d.address().getPort(), "--job", job,
                    "--schedule", schedule.toString()));
            if (live) {
                cmd.add("--live");
            }
            cmd.addAll(List.of("--", "/usr/bin/python3"));
            cmd.addAll(List.of(args));
            String text = CliIT.run(RunCli.NOT_APPLIED, cmd.toArray(String[]::new));
            System.out.println(text);
            String jobs = CliIT.run("jobs", "--addr", "127.0.0.1:" + d.address().getPort());
            assertTrue(jobs.lines().anyMatch(l -> l.matches(java.util.regex.Pattern.quote(job) + " +failed .* [0-9]+ "
                    + "schedule entr(y|ies) not applied; the first: at step .*")), jobs);
            return text;
        }
    }

    private static String py(Path p) {
        return "'" + p.toString().replace("'", "\\'") + "'";
    }
}
