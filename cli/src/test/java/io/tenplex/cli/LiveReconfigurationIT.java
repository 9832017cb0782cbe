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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live reconfiguration end to end (docs/LIVE.md): examples/elastic_gpt.py under {@code tenplex run
 * --live} with a real daemon, a real FUSE dataset view and real processes, on a schedule that grows the
 * world (2 -> 4: two processes join the two that continue), shrinks it (4 -> 2: two leave) and changes
 * the configuration within it (2 -> 2: the ranks keep their default process group). The live
 * run must equal the relaunched run of the same schedule bit for bit and the static (1,1,1) run within
 * 1e-9 (parameters, Adam state, losses, sample order), keeping rank 0's process throughout. The
 * failures (a rank that dies before it has saved for a change, a rank that dies while the others wait for
 * the commit, a change that fails after the save, a group that does not form in time) must each end in a relaunch of every rank that loses nothing:
 * the run still equals the static one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LiveReconfigurationIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final String STEPS = "24";
    private static final String SAMPLES = "192";
    private static final String SCHEDULE = """
            [{"step": 0, "size": 2, "tp": 2, "pp": 1, "dp": 1},
             {"step": 8, "size": 4, "tp": 1, "pp": 2, "dp": 2},
             {"step": 16, "size": 2, "tp": 1, "pp": 1, "dp": 2}]
            """;

    private Path dir;
    private Daemon daemon;
    private String addr;

    @BeforeAll
    void startDaemonAndStaticRun(@TempDir Path tmp) throws Exception {
        dir = tmp;
        Path mnt = Files.createDirectories(dir.resolve("mnt"));
        python(example(), "--make-data", dir.resolve("data").toString(), "--samples", SAMPLES); // one epoch in 24 steps of 8
        Files.writeString(dir.resolve("static.json"), "[{\"step\": 0, \"size\": 1}]");
        Files.writeString(dir.resolve("elastic.json"), SCHEDULE);
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 256L << 20, "test", mnt, null)
                .withSources(io.tenplex.datasets.SourcePolicy.none().withDataRoots(List.of(dir.resolve("data")))));
        addr = "http://127.0.0.1:" + daemon.address().getPort();
        run("static", dir.resolve("static.json"), false, List.of());
    }

    @AfterAll
    void stopDaemon() {
        if (daemon != null) {
            daemon.close();
        }
    }

    @Test
    void liveRun_equalsRelaunchedRunBitForBit_andStaticRun() throws Exception {
        Path schedule = dir.resolve("elastic3.json"); // and a change within the same world: 2 -> 2 ranks
        Files.writeString(schedule, SCHEDULE.strip().replaceFirst("]$", ",\n {\"step\": 20, \"size\": 2, \"tp\": 2, "
                + "\"pp\": 1, \"dp\": 1}]"));
        String relaunched = run("relaunched", schedule, false, List.of());
        assertTrue(relaunched.contains("tenplex run: 3 reconfiguration(s)"), relaunched);
        String live = run("live", schedule, true, List.of());
        assertTrue(live.contains("tenplex run: 3 reconfiguration(s)"), live);
        assertTrue(live.contains("live: ranks 0-1 continue in place under (T,P,D)=(2,1,1)"), live);
        assertTrue(live.contains("live: ranks 0-1 continue in place under (T,P,D)=(1,2,2), ranks 2-3 (started ahead) join"), live);
        assertTrue(live.contains("live: ranks 0-1 continue in place under (T,P,D)=(1,1,2), ranks 2-3 leave"), live);
        assertTrue(live.contains("step 8: (T,P,D)=(2,1,1) -> (T,P,D)=(1,2,2)") && live.contains(", live\n"), live);
        assertFalse(live.contains("relaunching"), live);
        assertTrue(live.contains("live: starting ranks 2-3 ahead of the commit"), live);
        assertStaticEquivalent("relaunched");
        assertStaticEquivalent("live");
        JsonNode check = lastJson(python(ROOT.resolve("tests/python/check_live.py").toString(), addr,
                dir.resolve("out").toString(), "relaunched", "live"));
        assertEquals(4, check.path("configs").size(), check.toString());
        assertEquals(1, distinct(check.path("live_pids")), "rank 0 keeps its process in a live run: " + check);
        assertEquals(4, distinct(check.path("relaunched_pids")), "a relaunched run starts rank 0 anew: " + check);
    }

    @Test
    void rankDiesWhileOthersWaitForTheCommit_everyRankIsRelaunchedUnderTheNewConfig() throws Exception {
        String out = run("die", dir.resolve("elastic.json"), true, List.of("die-waiting:1"));
        // the launcher sees rank 1's exit before the change commits, or (a fast commit) once the group does not form
        assertTrue(out.contains("rank 1 (exit 3) exited with an error during live reconfiguration 1")
                || out.contains("rank 1 (exit 3) exited with an error before the process group tenplex/live/1/group "
                + "formed"), out);
        assertTrue(out.contains("relaunching all 4 processes under (T,P,D)=(1,2,2) from generation 8"), out);
        assertTrue(out.contains("step 8: (T,P,D)=(2,1,1) -> (T,P,D)=(1,2,2)"), out);
        assertTrue(out.contains("live: ranks 0-1 continue in place under (T,P,D)=(1,1,2), ranks 2-3 leave"), out);
        assertStaticEquivalent("die");
    }

    @Test
    void rankDiesBeforeItHasSaved_theChangeIsCancelled_everyRankIsRelaunched_andTheChangePostedAgain() throws Exception {
        String out = run("die-unsaved", dir.resolve("elastic.json"), true, List.of("die-before-save:1"));
        // generation 8 cannot complete without rank 1: the change is cancelled, nothing is lost, and it is made again
        assertTrue(out.contains("rank 1 (exit 3) exited with an error during live reconfiguration 1"), out);
        assertTrue(out.contains("relaunching all 2 processes under (T,P,D)=(2,1,1) from the start (no complete "
                + "generation yet)"), out);
        assertTrue(out.contains("live: the change at step 8 is posted again for the relaunched ranks"), out);
        assertTrue(out.contains("at step 8: not reconfigured (the resource change cancelled: cancelled before every "
                + "rank had saved), relaunched: rank 1 (exit 3) exited with an error during live reconfiguration 1; "
                + "posted again"), out);
        assertTrue(out.contains("tenplex run: 2 reconfiguration(s)"), out); // both changes made after the relaunch
        assertFalse(out.contains("not applied"), "every schedule entry applied: " + out);
        assertStaticEquivalent("die-unsaved");
    }

    @Test
    void changeFailsAfterTheSave_ranksContinueInPlaceFromTheLastCompleteGeneration() throws Exception {
        Path schedule = dir.resolve("abort.json");
        Files.writeString(schedule, """
                [{"step": 0, "size": 2, "tp": 2, "pp": 1, "dp": 1},
                 {"step": 8, "size": 3, "tp": 3, "pp": 1, "dp": 1},
                 {"step": 16, "size": 4, "tp": 1, "pp": 2, "dp": 2}]
                """);
        String out = run(RunCli.NOT_APPLIED, "abort", schedule, true, List.of()); // its entry at step 8 was not applied
        assertTrue(out.contains("live: the resource change failed: layers.0.attn.qkv.weight: dim 0 of size 96 (4 units "
                + "of 24) cannot be split into T=3 equal parts; the ranks continue in place under (T,P,D)=(2,1,1) from "
                + "generation 8"), out);
        assertTrue(out.contains("live: ranks 0-1 continue in place under (T,P,D)=(2,1,1)\n"), out);
        assertTrue(out.contains("at step 8: not reconfigured (the resource change failed: "), out);
        assertFalse(out.contains("relaunching"), out);
        assertTrue(out.contains("live: ranks 0-1 continue in place under (T,P,D)=(1,2,2), ranks 2-3 (started ahead) join"), out);
        assertTrue(out.contains("tenplex run: 1 reconfiguration(s)"), out);
        assertTrue(out.contains("tenplex run: 1 schedule entry not applied (exit 3):\n  at step 8, change to 3 devices as "
                + "(T,P,D)=(3,1,1): the resource change failed: "), out);
        assertStaticEquivalent("abort");
        assertEquals(1, startPids("abort").size(), "rank 0 keeps its process through the failed change");
    }

    @Test
    void groupDoesNotFormInTime_everyRankIsRelaunchedUnderTheCommittedConfig() throws Exception {
        String out = run("hang", dir.resolve("elastic.json"), true, List.of("hang-regroup:1", "--regroup-timeout", "20"));
        assertTrue(out.contains("live: ranks 0-1 continue in place under (T,P,D)=(1,2,2), ranks 2-3 (started ahead) join"), out);
        assertTrue(out.contains("exited with an error before the process group tenplex/live/1/group formed"), out);
        assertTrue(out.contains("relaunching all 4 processes under (T,P,D)=(1,2,2) from generation 8"), out);
        assertTrue(out.contains("tenplex run: 2 reconfiguration(s)"), out); // the next change is not disturbed
        assertStaticEquivalent("hang");
    }

    @Test
    void storeHost_pythonWithoutTorch_relaunchModeRunsAsBefore_liveModeRefused() throws Exception {
        Path fake = dir.resolve("bin/python3-without-torch"); // a "python" that cannot host the store: it exits 0
        Files.createDirectories(fake.getParent());
        Files.writeString(fake, "#!/bin/sh\nexit 0\n");
        assertTrue(fake.toFile().setExecutable(true));
        String out = CliIT.run("run", "--addr", addr, "--job", "no-torch", "--schedule", dir.resolve("static.json")
                .toString(), "--", fake.toString());
        assertTrue(out.contains("tenplex run: rank 0 hosts the rendezvous store (the rendezvous store ("), out);
        assertTrue(out.contains("the job ended"), out);
        String err = CliIT.runErr(2, "run", "--addr", addr, "--job", "no-torch-live", "--live", "--schedule",
                dir.resolve("static.json").toString(), "--", "/bin/sh", "-c", "exit 0");
        assertTrue(err.contains("--live needs an interpreter with torch for the rendezvous store: the command '/bin/sh' "
                + "is not a python; give --store-python"), err);
    }

    /** tests/python/test_live.py: the store helper's protocol, tenplex.Config, and a handover with real processes. */
    @Test
    void pythonLive_storeProtocolConfigAndHandover() throws Exception {
        String out = python(ROOT.resolve("tests/python/test_live.py").toString());
        assertTrue(out.strip().endsWith("OK"), out);
    }

    /**
     * tests/python/test_live_store.py: a hostile process that reaches the store sets a forged, a wrongly signed
     * and a replayed role: each waiting rank refuses it (non-zero, never exit 0); a signed role works; the store
     * listens where the helper says (loopback where torch can bind one address).
     */
    @Test
    void pythonLiveStore_ranksRefuseForgedRolesAndTheStoreSaysWhereItListens() throws Exception {
        String out = python(ROOT.resolve("tests/python/test_live_store.py").toString());
        assertTrue(out.strip().endsWith("OK"), out);
    }

    /** check_elastic.py: the job's final state, losses and samples equal the static run's (within 1e-9). */
    private void assertStaticEquivalent(String job) throws Exception {
        String check = python(ROOT.resolve("tests/python/check_elastic.py").toString(), addr,
                dir.resolve("out").toString(), "static", job, "none");
        System.out.println(check);
        assertTrue(check.strip().endsWith("OK"), check);
    }

    /**
     * {@code tenplex run} of the example (through tests/python/live_faults.py when {@code fault} is given:
     * its first element is the fault, the rest are options of tenplex run).
     */
    private String run(String job, Path schedule, boolean live, List<String> fault) {
        return run(0, job, schedule, live, fault);
    }

    /** As above; the run's exit status must be {@code status}. */
    private String run(int status, String job, Path schedule, boolean live, List<String> fault) {
        List<String> args = new ArrayList<>(List.of("run", "--addr", addr, "--job", job, "--schedule", schedule.toString()));
        if (live) {
            args.add("--live");
        }
        args.addAll(fault.size() > 1 ? fault.subList(1, fault.size()) : List.of());
        args.addAll(List.of("--", "/usr/bin/python3"));
        if (!fault.isEmpty()) {
            args.addAll(List.of(ROOT.resolve("tests/python/live_faults.py").toString(), fault.get(0), "--"));
        } else {
            args.add(example());
        }
        args.addAll(List.of("--dataset", dir.resolve("data/index.txt").toString(), "--mount", dir.resolve("mnt")
                .toString(), "--out", dir.resolve("out").toString(), "--steps", STEPS, "--plot", "none"));
        String text = CliIT.run(status, args.toArray(String[]::new));
        System.out.println(text);
        return text;
    }

    private static String example() {
        return ROOT.resolve("examples/elastic_gpt.py").toString();
    }

    private String python(String... args) throws Exception {
        return LiveProcesses.python(dir, args);
    }

    private static JsonNode lastJson(String out) throws Exception {
        String[] lines = out.strip().split("\n");
        assertEquals("OK", lines[lines.length - 1], out);
        return TenplexCli.JSON.readTree(lines[lines.length - 2]);
    }

    /** The process ids rank 0 of {@code job} logged at each start of training. */
    private Set<String> startPids(String job) throws Exception {
        Set<String> pids = new HashSet<>();
        for (String line : Files.readAllLines(dir.resolve("out").resolve(job + ".jsonl"))) {
            JsonNode r = TenplexCli.JSON.readTree(line);
            if (r.path("event").asText().equals("start")) {
                pids.add(r.path("pid").asText());
            }
        }
        return pids;
    }

    private static int distinct(JsonNode values) {
        Set<String> s = new HashSet<>();
        values.forEach(v -> s.add(v.asText()));
        return s.size();
    }
}
