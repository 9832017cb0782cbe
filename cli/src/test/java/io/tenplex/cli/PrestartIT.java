package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pre-started interpreters in relaunch mode (issue 30 item 2; docs/LIVE.md): {@code tenplex run} starts
 * the next configuration's processes when it posts a change and lets them run the user's script only
 * after the commit. With a real daemon, a real FUSE dataset view and real Python processes: the README's
 * example run this way ends bit for bit as the same run with {@code --no-prestart} (and within 1e-9 of
 * the static run); the new ranks' processes start before the commit (their start time read from
 * {@code /proc}, not from the launcher) and run the script only after every old rank has exited; when
 * the change fails or the job ends, the pre-started processes exit 0 and none is left behind, and those of
 * a launcher killed with SIGKILL exit by themselves.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PrestartIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final Pattern TOLD = Pattern.compile(
            "(\\d+) pre-started interpreter\\(s\\) not needed, told to exit: (.*)");
    private static final Pattern PIDS = Pattern.compile("pre-started \\d+ interpreter\\(s\\) for the next configuration "
            + "\\(pids ([0-9, ]+)\\)");
    private static final String SCHEDULE = """
            [{"step": 0, "size": 2, "tp": 2, "pp": 1, "dp": 1},
             {"step": 8, "size": 4, "tp": 1, "pp": 2, "dp": 2},
             {"step": 16, "size": 2, "tp": 1, "pp": 1, "dp": 2}]
            """;

    private Path dir;
    private Daemon daemon;
    private String addr;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void startDaemonAndStaticRun(@TempDir Path tmp) throws Exception {
        dir = tmp;
        Path mnt = Files.createDirectories(dir.resolve("mnt"));
        python(example(), "--make-data", dir.resolve("data").toString(), "--samples", "192");
        Files.writeString(dir.resolve("static.json"), "[{\"step\": 0, \"size\": 1}]");
        Files.writeString(dir.resolve("elastic.json"), SCHEDULE);
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 256L << 20, "test", mnt, null)
                .withSources(io.tenplex.datasets.SourcePolicy.none().withDataRoots(List.of(dir.resolve("data")))));
        addr = "127.0.0.1:" + daemon.address().getPort();
        example("static", dir.resolve("static.json"), 0);
    }

    @AfterAll
    void stopDaemon() {
        if (daemon != null) {
            daemon.close();
        }
    }

    @Test
    void preStartedRun_equalsRunWithoutBitForBit_andStaticRun() throws Exception {
        String cold = example("cold", dir.resolve("elastic.json"), 0, "--no-prestart");
        assertFalse(cold.contains("pre-started"), cold);
        String pre = example("pre", dir.resolve("elastic.json"), 0);
        assertTrue(pre.contains("tenplex run: 2 reconfiguration(s)"), pre);
        assertTrue(pre.contains("] pre-started 4 interpreter(s) for the next configuration (pids "), pre);
        assertTrue(pre.contains("] pre-started interpreter(s) take ranks 0-3 (started when the change was posted)"),
                pre);
        assertTrue(pre.contains("] pre-started 2 interpreter(s) for the next configuration (pids "), pre);
        assertTrue(pre.contains("] pre-started interpreter(s) take ranks 0-1 (started when the change was posted)"),
                pre);
        assertFalse(pre.contains("not needed"), pre);
        for (String job : List.of("cold", "pre")) {
            String check = python(ROOT.resolve("tests/python/check_elastic.py").toString(), "http://" + addr,
                    dir.resolve("out").toString(), "static", job, "none");
            assertTrue(check.strip().endsWith("OK"), check);
        }
        String same = python(ROOT.resolve("tests/python/check_live.py").toString(), "http://" + addr,
                dir.resolve("out").toString(), "cold", "pre");
        assertTrue(same.strip().endsWith("OK"), "bit for bit: " + same);
    }

    @Test
    void changeFails_preStartedInterpretersExit0_andNoneIsLeftBehind() throws Exception {
        Path schedule = Files.writeString(dir.resolve("abort.json"), """
                [{"step": 0, "size": 2, "tp": 2, "pp": 1, "dp": 1},
                 {"step": 8, "size": 3, "tp": 3, "pp": 1, "dp": 1}]
                """);
        String out = example("abort", schedule, 1);
        assertTrue(out.contains("] pre-started 3 interpreter(s) for the next configuration (pids "), out);
        assertTrue(out.contains("the resource change failed: layers.0.attn.qkv.weight: dim 0 of size 96"), out);
        assertToldToExit(out, 3);
    }

    @Test
    void newRanksStartBeforeTheCommit_andRunTheScriptOnlyAfterTheOldRanksExited() throws Exception {
        // the second batch starts after the first change's new rank has taken its first step (step 4)
        Path schedule = Files.writeString(dir.resolve("dt.json"), "[{\"step\": 0, \"size\": 2, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 2}, {\"step\": 3, \"size\": 1, \"tp\": 1, \"pp\": 1, \"dp\": 1}, {\"step\": 9, \"size\": 2, "
                + "\"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        for (boolean prestart : List.of(true, false)) {
            String job = prestart ? "dt-pre" : "dt-cold";
            Path out = Files.createDirectories(dir.resolve(job));
            String text = ranks(job, schedule, out, "12", "0.3", prestart);
            JsonNode changes = get("/api/v1/jobs/" + job + "/downtime").path("reconfigurations");
            assertEquals(2, changes.size(), changes.toString());
            for (JsonNode c : changes) {
                JsonNode status = get("/api/v1/jobs/" + job + "/resources/" + c.path("change").asText());
                int old = status.path("generation").asLong() == 3 ? 0 : 1; // the segment whose ranks stopped
                assertStartAndGo(out, old, status.path("downtime"), prestart, text);
            }
            assertEquals(prestart, text.contains("] pre-started interpreter(s) take rank 0 (started when the "
                    + "change was posted)"), text);
        }
    }

    @Test
    void jobEndsBeforeTheChange_preStartedInterpretersExit0_andNoneIsLeftBehind() throws Exception {
        Path schedule = Files.writeString(dir.resolve("ends.json"), "[{\"step\": 0, \"size\": 1, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 1}, {\"step\": 30, \"size\": 2, \"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        String text = ranks(RunCli.NOT_APPLIED, "ends", schedule, Files.createDirectories(dir.resolve("ends")), "3", "0.1",
                true);
        assertTrue(text.contains("] pre-started 2 interpreter(s) for the next configuration (pids "), text);
        assertTrue(text.contains("the job ended before step 30"), text);
        assertTrue(text.contains("  at step 30, change to 2 devices as (T,P,D)=(1,1,2): the ranks ended after step "), text);
        assertToldToExit(text, 2);
    }

    /**
     * A launcher killed with SIGKILL (no shutdown hook runs) leaves its pre-started interpreters waiting
     * on a pipe that has ended: they exit by themselves. The ranks it left are ended here by PID.
     */
    @Test
    @Timeout(300)
    void launcherKilled_preStartedInterpretersExitByThemselves() throws Exception {
        Path schedule = Files.writeString(dir.resolve("killed.json"), "[{\"step\": 0, \"size\": 1, \"tp\": 1, \"pp\": 1, "
                + "\"dp\": 1}, {\"step\": 1000, \"size\": 2, \"tp\": 1, \"pp\": 1, \"dp\": 2}]");
        Path out = Files.createDirectories(dir.resolve("killed"));
        Process launcher = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-cp",
                ROOT.resolve("cli/target/tenplex.jar").toString(), "io.tenplex.cli.TenplexCli", "run", "--addr", addr,
                "--job", "killed", "--schedule", schedule.toString(), "--", "/usr/bin/python3",
                ROOT.resolve("cli/src/test/resources/downtime_rank.py").toString(), ROOT.resolve("clients/python")
                        .toString(), out.toString(), "2000", "0.1").redirectErrorStream(true).start();
        List<ProcessHandle> left = new ArrayList<>();
        try (var lines = new java.io.BufferedReader(new java.io.InputStreamReader(launcher.getInputStream(),
                StandardCharsets.UTF_8))) {
            Matcher m = null;
            for (String l = lines.readLine(); l != null && m == null; l = lines.readLine()) {
                Matcher x = PIDS.matcher(l);
                m = x.find() ? x : null;
            }
            assertTrue(m != null, "the launcher printed no pre-started pids");
            left.addAll(launcher.toHandle().descendants().toList());
            launcher.destroyForcibly().waitFor();
            for (String pid : m.group(1).split(", ")) {
                ProcessHandle h = ProcessHandle.of(Long.parseLong(pid)).orElse(null);
                if (h != null) {
                    h.onExit().get(120, java.util.concurrent.TimeUnit.SECONDS); // fails on a timeout
                }
            }
        } finally {
            launcher.destroyForcibly();
            left.forEach(ProcessHandle::destroyForcibly); // the old rank and the store helper, by PID
        }
    }

    /** tests/python/test_prestart.py: the entry point's line protocol and how it runs the script. */
    @Test
    void pythonPrestart_runsTheScriptAsPythonWould() throws Exception {
        String out = python(ROOT.resolve("tests/python/test_prestart.py").toString());
        assertTrue(out.strip().endsWith("OK"), out);
    }

    /**
     * Change from segment {@code old} to {@code old + 1}: every new rank's process started before the
     * commit with pre-started interpreters, after the old ranks ended without; either way its script began
     * only after every old rank's script ended; the daemon's {@code spawn} (commit to the last process
     * start) is 0 with pre-started interpreters (their start precedes the commit).
     */
    private static void assertStartAndGo(Path out, int old, JsonNode d, boolean prestart, String text) throws Exception {
        double stop = Double.MAX_VALUE;
        double ended = 0;
        List<JsonNode> fresh = new ArrayList<>();
        for (Path f : Files.list(out).toList()) {
            JsonNode t = TenplexCli.JSON.readTree(f.toFile());
            if (t.path("segment").asInt() == old) {
                stop = Math.min(stop, t.path("stop").asDouble());
                ended = Math.max(ended, t.path("ended").asDouble());
            } else if (t.path("segment").asInt() == old + 1) {
                fresh.add(t);
            }
        }
        // the daemon's commit: its phases from the first stop mark (the script's stop is a moment later)
        double commit = stop + d.path("phases").path("save").asDouble() + d.path("phases").path("commit").asDouble();
        assertEquals(old == 0 ? 1 : 2, fresh.size(), out.toString());
        for (JsonNode t : fresh) {
            double started = t.path("process_start").asDouble();
            String what = t + " old ranks: first stop " + stop + ", commit ~" + commit + ", last end " + ended + "\n" + text;
            assertTrue(prestart ? started < commit : started > ended, "process start: " + what);
            assertTrue(t.path("began").asDouble() > ended, "the script began after the old ranks ended: " + what);
        }
        assertEquals(prestart, d.path("daemon").path("spawn").asDouble(-1) == 0.0, d.toString());
    }

    /** The pre-started interpreters were told to exit: {@code n} of them, each exit 0, none still running. */
    private static void assertToldToExit(String text, int n) {
        Matcher m = TOLD.matcher(text);
        assertTrue(m.find(), text);
        assertEquals(n, Integer.parseInt(m.group(1)), text);
        String[] each = m.group(2).strip().split(", ");
        assertEquals(n, each.length, text);
        for (String e : each) {
            assertTrue(e.endsWith(" (exit 0)"), text);
            long pid = Long.parseLong(e.substring(0, e.indexOf(' ')));
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "pid " + pid + " left behind");
        }
    }

    /** tenplex run of cli/src/test/resources/downtime_rank.py ({@code steps} steps of {@code seconds}). */
    private String ranks(String job, Path schedule, Path out, String steps, String seconds, boolean prestart) {
        return ranks(0, job, schedule, out, steps, seconds, prestart);
    }

    /** As above; the run's exit status must be {@code status}. */
    private String ranks(int status, String job, Path schedule, Path out, String steps, String seconds, boolean prestart) {
        List<String> args = new ArrayList<>(List.of("run", "--addr", addr, "--job", job, "--schedule", schedule.toString()));
        if (!prestart) {
            args.add("--no-prestart");
        }
        args.addAll(List.of("--", "/usr/bin/python3", ROOT.resolve("cli/src/test/resources/downtime_rank.py").toString(),
                ROOT.resolve("clients/python").toString(), out.toString(), steps, seconds));
        String text = CliIT.run(status, args.toArray(String[]::new));
        System.out.println(text);
        return text;
    }

    /** tenplex run of examples/elastic_gpt.py (24 steps, one epoch) with {@code more} options; its exit status {@code status}. */
    private String example(String job, Path schedule, int status, String... more) {
        List<String> args = new ArrayList<>(List.of("run", "--addr", addr, "--job", job, "--schedule", schedule.toString()));
        args.addAll(List.of(more));
        args.addAll(List.of("--", "/usr/bin/python3", example(), "--dataset", dir.resolve("data/index.txt").toString(),
                "--mount", dir.resolve("mnt").toString(), "--out", dir.resolve("out").toString(), "--steps", "24",
                "--plot", "none"));
        String text = CliIT.run(status, args.toArray(String[]::new));
        System.out.println(text);
        return text;
    }

    private static String example() {
        return ROOT.resolve("examples/elastic_gpt.py").toString();
    }

    private JsonNode get(String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + addr + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return TenplexCli.JSON.readTree(r.body());
    }

    private String python(String... args) throws Exception {
        return LiveProcesses.python(dir, args);
    }
}
