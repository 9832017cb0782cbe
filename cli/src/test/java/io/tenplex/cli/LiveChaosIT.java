package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.DaemonProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The chaos test of live mode (docs/LIVE.md, "When a process dies"): examples/elastic_gpt.py under
 * {@code tenplex run --live} (real PyTorch ranks with gloo, a real daemon process with a FUSE dataset
 * view and a durable directory) on the schedule 2 -> 4 -> 2 ranks, with one process killed by SIGKILL:
 * a rank at each phase of its first live reconfiguration (before its save, while it waits for the
 * commit, as it forms the new group, as it loads its new shards; a kept rank and a rank started ahead),
 * the launcher itself, and the daemon while the change moves the state. The invariants, after each:
 * <ul>
 *   <li>no process is left behind: every process the run started (ranks, pre-started interpreters,
 *       the rendezvous store) has exited, also when the launcher was the one killed;
 *   <li>the job recovers (a killed rank: {@code tenplex run} relaunches every rank and the run ends
 *       equal to the static run, losses, samples and final state) or ends with a clear message (the
 *       launcher or the daemon killed);
 *   <li>every generation that was complete before the kill (durable, for the daemon killed) loads bit
 *       for bit afterwards, or the daemon reports it lost.
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LiveChaosIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final String STEPS = "24";
    private static final String SCHEDULE = """
            [{"step": 0, "size": 2, "tp": 2, "pp": 1, "dp": 1},
             {"step": 8, "size": 4, "tp": 1, "pp": 2, "dp": 2},
             {"step": 16, "size": 2, "tp": 1, "pp": 1, "dp": 2}]
            """;

    private Path dir;
    private String port;
    private DaemonProcess daemon;

    @BeforeAll
    void startDaemonAndStaticRun(@TempDir Path tmp) throws Exception {
        dir = tmp;
        Files.createDirectories(dir.resolve("mnt"));
        LiveProcesses.python(dir, example(), "--make-data", dir.resolve("data").toString(), "--samples", "192");
        Files.writeString(dir.resolve("static.json"), "[{\"step\": 0, \"size\": 1}]");
        Files.writeString(dir.resolve("elastic.json"), SCHEDULE);
        port = DaemonProcess.reservePeers(1).port(0);
        startDaemon();
        CliIT.run(runArgs("static", dir.resolve("static.json"), "none", List.of(), List.of()).toArray(String[]::new));
    }

    @AfterAll
    void stopDaemon() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
        LiveProcesses.unmount(dir.resolve("mnt"));
    }

    private void startDaemon() throws Exception {
        daemon = DaemonProcess.start("--port", port, "--memory-limit", "512m", "--mount", dir.resolve("mnt").toString(),
                "--data-root", dir.resolve("data").toString(), "--checkpoint-dir", dir.resolve("durable").toString());
    }

    private String addr() {
        return daemon.url();
    }

    /**
     * A rank SIGKILLed at one phase of the first live reconfiguration (tests/python/live_faults.py): every
     * rank is relaunched, the run ends equal to the static run, no process is left behind.
     */
    @ParameterizedTest
    @ValueSource(strings = {"kill-before-save:1", "kill-waiting:1", "kill-waiting:2", "kill-regroup:1", "kill-load:1"})
    void rankKilledAtAPhaseOfTheChange_jobRecovers_nothingLost_noProcessLeft(String fault) throws Exception {
        String job = fault.replace(':', '-');
        LiveProcesses.Tree before = LiveProcesses.Tree.ofThisJvm();
        String out = CliIT.run(runArgs(job, dir.resolve("elastic.json"), fault, List.of(), List.of()).toArray(String[]::new));
        System.out.println(out);
        String rank = fault.substring(fault.indexOf(':') + 1);
        assertTrue(out.contains("rank " + rank + " (exit 137)"), "the launcher names the killed rank: " + out);
        assertTrue(out.contains("relaunching all"), out);
        assertTrue(out.contains("relaunched: rank " + rank + " (exit 137)"), "the summary says the change ended in a "
                + "relaunch: " + out);
        assertEquals(List.of(), before.newSince(), "processes left behind after " + fault);
        assertFalse(out.contains("not applied"), "every schedule entry applied: " + out);
        if (out.contains("not reconfigured (")) { // the change did not commit: posted again for the relaunched ranks
            assertTrue(out.contains("is posted again for the relaunched ranks") && out.contains("; posted again"), out);
        }
        assertStaticEquivalent(job);
    }

    /**
     * The launcher SIGKILLed while the ranks are at their save for a change (held there) and the ranks
     * started ahead wait for their role: every process it started exits by itself (each rank's watcher
     * ends it, the store's input ends); the change fails at its save timeout; what was complete stays bit
     * for bit.
     */
    @Test
    void launcherKilledMidChange_everyProcessItStartedExits_generationsKeep() throws Exception {
        String job = "launcher-killed";
        LiveProcesses.Launcher launcher = LiveProcesses.launcher(runArgs(job, dir.resolve("elastic.json"),
                "hold-before-save:" + dir.resolve(job + ".go"), List.of("--save-timeout", "30"), List.of("--save-at", "4")),
                dir.resolve(job + ".log"));
        try {
            String change = changeOf(launcher.awaitLine("live reconfiguration 1)", 300));
            launcher.awaitLine("holding its save", 300);
            LiveProcesses.awaitLevel(addr(), job, 4, "memory", 60);
            List<ProcessHandle> started = LiveProcesses.awaitDescendants(launcher.process, 5, 60); // 4 ranks, the store
            JsonNode complete = digest(job);
            launcher.process.toHandle().destroyForcibly(); // SIGKILL
            assertEquals(137, launcher.process.waitFor());
            List<String> left = LiveProcesses.awaitExit(started, 60);
            assertEquals(List.of(), left, "processes the killed launcher started still run 60 s later");
            String ended = LiveProcesses.awaitChangeEnd(addr(), "/api/v1/jobs/" + job + "/resources/" + change, 120);
            System.out.println("LiveChaosIT: the change the killed launcher posted ended " + ended);
            // each rank's watcher says "the launcher (pid N) is gone; ending it" (tests/python/test_live.py checks
            // the line) unless the rank ended first: one waiting in the store sees the store's end at once
            System.out.println("LiveChaosIT: " + launcher.lines().stream().filter(l -> l.contains("is gone; ending it"))
                    .count() + " rank(s) ended by their watcher");
            assertGenerationsKept(complete, digest(job), false);
        } finally {
            launcher.endAll();
        }
    }

    /**
     * The daemon SIGKILLed in the middle of a change (its stop flag raised, the ranks at their save): the
     * launcher ends with one clear line (no stack trace) and every process it started exits; the daemon
     * restarted on its directory serves every generation that was durable before the kill bit for bit, or
     * reports it lost.
     */
    @Test
    void daemonKilledMidChange_launcherEndsClearly_durableGenerationsKeep() throws Exception {
        String job = "daemon-killed";
        Path go = dir.resolve(job + ".go");
        LiveProcesses.Launcher launcher = LiveProcesses.launcher(runArgs(job, dir.resolve("elastic.json"),
                "hold-before-save:" + go, List.of(), List.of("--save-at", "4")), dir.resolve(job + ".log"));
        JsonNode durable;
        List<String> out;
        try {
            String status = "/api/v1/jobs/" + job + "/resources/" + changeOf(launcher.awaitLine("live reconfiguration 1)", 300));
            launcher.awaitLine("holding its save", 300);
            LiveProcesses.awaitLevel(addr(), job, 4, "durable", 120);
            durable = digest(job);
            assertEquals("stopping", LiveProcesses.state(addr(), status), "the change waits for the held saves");
            daemon.close(); // SIGKILL
            Files.createFile(go); // the ranks save into the daemon that is gone
            List<ProcessHandle> started = launcher.process.toHandle().descendants().toList();
            assertTrue(launcher.process.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), "the launcher ends");
            assertNotEquals(0, launcher.process.exitValue(), "the launcher fails when its daemon is gone");
            assertEquals(List.of(), LiveProcesses.awaitExit(started, 60), "processes left behind");
            out = launcher.lines();
        } finally {
            launcher.endAll();
            if (!daemon.running()) {
                LiveProcesses.unmount(dir.resolve("mnt"));
                startDaemon();
            }
        }
        // the launcher's own last word (the ranks' output shares its stream): what went wrong, in one line
        assertTrue(out.stream().anyMatch(l -> l.startsWith("tenplex: ") && l.contains(addr())), "a clear line naming "
                + "the daemon: " + String.join("\n", out));
        assertTrue(out.stream().noneMatch(l -> l.contains("\tat io.tenplex") || l.startsWith("Exception")), "no stack "
                + "trace: " + String.join("\n", out));
        assertGenerationsKept(durable, digest(job), true);
    }

    /**
     * Ctrl-C (a real SIGINT to the launcher) just after the first live change committed, then the same
     * command: it resumes from that change's generation under the committed configuration, skips the
     * entry, applies the next one live, and the run ends equal to the static run.
     */
    @Test
    void sigintAfterALiveChange_theSameCommandResumes_equalToTheStaticRun() throws Exception {
        String job = "live-again";
        List<String> args = runArgs(job, dir.resolve("elastic.json"), "none", List.of(), List.of());
        LiveProcesses.Launcher launcher = LiveProcesses.launcher(args, dir.resolve(job + ".log"));
        try {
            launcher.awaitLine("committed: ", 300);
            assertEquals(0, new ProcessBuilder("kill", "-INT", Long.toString(launcher.process.pid())).start().waitFor());
            assertTrue(launcher.process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "tenplex run ended on SIGINT");
        } finally {
            launcher.endAll();
        }
        String again = CliIT.run(args.toArray(String[]::new));
        System.out.println(again);
        assertTrue(again.contains("job " + job + " has generation 8 (saved under (T,P,D)=(2,1,1)): resuming under "
                + "(T,P,D)=(1,2,2) from it; 1 schedule entry already applied, next at step 16"), again);
        assertFalse(again.contains("not applied"), again);
        assertStaticEquivalent(job);
    }

    /** The id of the resource change in the launcher's line {@code ... (resource change ID, live reconfiguration N)}. */
    private static String changeOf(String line) {
        return line.replaceFirst(".*\\(resource change ([^,]+),.*", "$1");
    }

    /** Every complete (with {@code durableOnly}: durable) generation of {@code before} is in {@code after} bit for bit, or lost. */
    private static void assertGenerationsKept(JsonNode before, JsonNode after, boolean durableOnly) {
        int kept = 0;
        for (Map.Entry<String, JsonNode> g : iterable(before.path("generations"))) {
            JsonNode b = g.getValue();
            if (b.path("ranks").isEmpty() || durableOnly && !b.path("levels").toString().contains("durable")) {
                continue;
            }
            JsonNode a = after.path("generations").path(g.getKey());
            if (a.isMissingNode() && after.path("current").asLong() > Long.parseLong(g.getKey())) {
                System.out.println("generation " + g.getKey() + " dropped after generation " + after.path("current")
                        + " completed (retention)");
                continue;
            }
            if (a.hasNonNull("lost")) {
                System.out.println("generation " + g.getKey() + " reported lost: " + a.path("lost"));
                continue;
            }
            assertEquals(b.path("ranks"), a.path("ranks"), "generation " + g.getKey() + " after the kill: " + after);
            kept++;
        }
        assertTrue(kept > 0, "no generation to check (none complete before the kill): " + before);
    }

    private static Iterable<Map.Entry<String, JsonNode>> iterable(JsonNode o) {
        return o::fields;
    }

    private JsonNode digest(String job) throws Exception {
        String out = LiveProcesses.python(dir, ROOT.resolve("tests/python/generation_digest.py").toString(), addr(), job);
        String[] lines = out.strip().split("\n");
        assertEquals("OK", lines[lines.length - 1], out);
        return TenplexCli.JSON.readTree(lines[lines.length - 2]);
    }

    private void assertStaticEquivalent(String job) throws Exception {
        String check = LiveProcesses.python(dir, ROOT.resolve("tests/python/check_elastic.py").toString(), addr(),
                dir.resolve("out").toString(), "static", job, "none");
        System.out.println(check);
        assertTrue(check.strip().endsWith("OK"), check);
    }

    /**
     * {@code tenplex run} (live unless {@code job} is the static run) of the example under
     * tests/python/live_faults.py with {@code fault}; {@code options} go to tenplex run, {@code exampleOptions}
     * to the example.
     */
    private List<String> runArgs(String job, Path schedule, String fault, List<String> options,
            List<String> exampleOptions) {
        List<String> args = new ArrayList<>(List.of("run", "--addr", addr(), "--job", job, "--schedule",
                schedule.toString()));
        if (!job.equals("static")) {
            args.add("--live");
        }
        args.addAll(options);
        args.addAll(List.of("--", "/usr/bin/python3", ROOT.resolve("tests/python/live_faults.py").toString(), fault, "--",
                "--dataset", dir.resolve("data/index.txt").toString(), "--mount", dir.resolve("mnt").toString(), "--out",
                dir.resolve("out").toString(), "--steps", STEPS, "--plot", "none"));
        args.addAll(exampleOptions);
        return args;
    }

    private static String example() {
        return ROOT.resolve("examples/elastic_gpt.py").toString();
    }
}
