package io.tenplex.cli;

import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.ModelSpecJson;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The tenplex CLI against real daemons on loopback: the demo end to end, ls, status, plan --dry-run. */
class CliIT {

    static String run(String... args) {
        return run(0, args);
    }

    /** Runs the CLI in this JVM and returns what it printed; its exit status must be {@code status}. */
    static String run(int status, String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            int rc = TenplexCli.commandLine().execute(args);
            assertEquals(status, rc, out.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void demo_reconfiguresThreeTimes_andVerifiesEveryShard() {
        String out = run("demo", "--layers", "4", "--hidden", "64", "--vocab", "1000");
        assertTrue(out.contains("(T,P,D)=(2,2,2) -> (T,P,D)=(4,1,2): committed"), out);
        assertTrue(out.contains("(T,P,D)=(4,1,2) -> (T,P,D)=(1,4,1): committed"), out);
        assertTrue(out.contains("(T,P,D)=(1,4,1) -> (T,P,D)=(2,2,2): committed"), out);
        assertTrue(out.contains("demo: every shard of every step verified bit for bit"), out);
        assertFalse(out.contains("\r"), "no redraws when the output is not a terminal: " + out);
        assertTrue(out.contains("MiB committed\n") && out.contains("  phases: check "), out);
    }

    @Test
    void status_ls_andDryRunPlan(@TempDir Path dir) throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            io.tenplex.store.Fixtures.putF32(d.store(), "/job/x/save/0/w", 2, 3);
            String ls = run("ls", "--addr", addr, "/job/x/save/0");
            assertTrue(ls.contains("tensor") && ls.contains("f32[2,3]") && ls.contains("w"), ls);
            String status = run("status", "--addr", addr);
            assertTrue(status.contains(": ok") && status.contains("store tensors: 1\n"), status);
            assertTrue(status.contains("ok, 1 top-level entry\n"), status); // one entry, said in the singular
            assertTrue(status.contains("store budget bytes: 64.0 MiB"), status);
            String bare = run("status", "--addr", "127.0.0.1:" + d.address().getPort()); // as the Python client
            assertTrue(bare.contains(": ok"), bare);
            Path req = dir.resolve("req.json");
            Files.writeString(req, "{\"model\": " + ModelSpecJson.write(MegatronLayout.model(
                    MegatronLayout.Shape.gpt(2, 64, 8, 1000, 16))) + ", \"from\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, "
                    + "\"devicesPerWorker\": 2}, \"to\": {\"tp\": 1, \"pp\": 2, \"dp\": 2, \"devicesPerWorker\": 2}}");
            String plan = run("plan", "--dry-run", "--addr", addr, "--job", "x", "--request", req.toString());
            assertTrue(plan.startsWith("plan (T,P,D)=(2,1,2) -> (T,P,D)=(1,2,2)"), plan);
            assertTrue(plan.contains("merge of 2"), plan);
        }
    }

    @Test
    void dataset_indexMountAndStatus(@TempDir Path dir) throws Exception {
        Path data = Files.writeString(dir.resolve("lines.txt"), "a\nbb\nccc\ndddd\neeeee\nf\ng\nh\n");
        Path index = dir.resolve("index.txt");
        run("dataset", "index", "--format", "lines", "-o", index.toString(), data.toString());
        assertTrue(Files.readString(index).startsWith("1\n" + data.toAbsolutePath() + " 8\n0 2\n2 5\n"));
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null)
                .withSources(io.tenplex.datasets.SourcePolicy.none().withDataRoots(java.util.List.of(dir))))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            String mounted = run("dataset", "mount", "--addr", addr, "--job", "d", "--index", index.toString(),
                    "--global-batch", "3", "--dp", "2", "--no-shuffle");
            assertTrue(mounted.contains("2 batches of 3 (2 samples dropped), local batches [2,1]"), mounted);
            String status = run("dataset", "status", "--addr", addr, "--job", "d");
            assertTrue(status.contains("progress 0, G 3, N 2, 2 batches"), status);
        }
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cl = TenplexCli.commandLine();
        cl.setErr(new java.io.PrintWriter(err));
        assertEquals(2, cl.execute("dataset", "index", "--format", "parquet", data.toString()));
        assertTrue(err.toString().contains("tenplex: unknown format 'parquet'"), err.toString());
    }

    @Test
    void jobs_listsEachJobsCurrentGenerationConfigurationSizeAndLastSave() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            assertEquals("no jobs\n", run("jobs", "--addr", addr));
            io.tenplex.client.TenplexClient c = new io.tenplex.client.TenplexClient(addr, null);
            java.util.Map<String, ?> state = java.util.Map.of("w", new io.tenplex.client.Tensor("f32", new long[] {256},
                    new byte[1024]));
            String config = "{\"tp\": 1, \"pp\": 2, \"dp\": 1, \"devices\": [[0, 0], [0, 1]]}";
            c.saveRank("done", 60, 0, 2, state, config);
            c.saveRank("done", 60, 1, 2, state, config);
            c.saveRank("done", 70, 0, 2, state, config); // rank 1 never sealed step 70
            String out = run("jobs", "--addr", addr);
            String line = out.lines().filter(l -> l.startsWith("done ")).findFirst().orElse("");
            assertTrue(out.startsWith("JOB "), out);
            assertTrue(line.matches("done +- +60 +\\(1,2,1\\) +\\S+ +[0-9.]+ KiB +step 70"), out); // no launcher's record

            // what a launcher records: running while its process lives, failed once it is gone without an end
            Process gone = new ProcessBuilder("true").start();
            gone.waitFor();
            for (long pid : new long[] {ProcessHandle.current().pid(), gone.pid()}) {
                c.putFile("/job/done/run.json", ("{\"state\": \"running\", \"launcher\": {\"pid\": " + pid
                        + ", \"host\": \"" + RunRecord.host() + "\"}}").getBytes(java.nio.charset.StandardCharsets.UTF_8), true);
                String jobs = run("jobs", "--addr", addr);
                assertTrue(jobs.lines().anyMatch(l -> pid == gone.pid()
                        ? l.matches("done +failed +60 .*step 70 +its launcher \\(tenplex run, pid " + pid + "\\) is gone "
                        + "without recording an end") : l.matches("done +running +60 .*step 70")), jobs);
            }
        }
    }

    @Test
    void rm_refusesAnUnknownJob_removesAJob_andItsNameStartsClean() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            io.tenplex.client.TenplexClient c = new io.tenplex.client.TenplexClient(addr, null);
            java.util.Map<String, ?> state = java.util.Map.of("w", new io.tenplex.client.Tensor("f32", new long[] {256},
                    new byte[1024]));
            c.saveRank("old", 60, 0, 1, state, null);
            java.io.StringWriter err = new java.io.StringWriter();
            CommandLine cl = TenplexCli.commandLine();
            cl.setErr(new java.io.PrintWriter(err));
            assertEquals(2, cl.execute("rm", "--addr", addr, "nosuch"));
            assertTrue(err.toString().startsWith("tenplex: cannot remove job nosuch (daemon answered 404): no job "
                    + "'nosuch' on this daemon (known jobs: old)"), err.toString());
            String out = run("rm", "--addr", addr, "old");
            assertTrue(out.matches("removed job old here \\([0-9.]+ KiB of its tree\\)\\n"), out);
            assertEquals("no jobs\n", run("jobs", "--addr", addr));
            c.saveRank("old", 5, 0, 1, state, null); // an older step than the removed job's: a clean start
            assertTrue(run("jobs", "--addr", addr).lines().anyMatch(l -> l.matches("old +- +5 .*step 5")));
        }
    }

    /**
     * {@code tenplex rm ""} (a script's {@code tenplex rm $JOB} with {@code JOB} unset) and other names
     * that are not a job's are refused before anything is sent: every job stays.
     */
    @Test
    void rmEmptyName_isRefusedBeforeAsking_andKeepsEveryJob() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            io.tenplex.client.TenplexClient c = new io.tenplex.client.TenplexClient(addr, null);
            java.util.Map<String, ?> state = java.util.Map.of("w", new io.tenplex.client.Tensor("f32", new long[] {256},
                    new byte[1024]));
            c.saveRank("a", 10, 0, 1, state, null);
            c.saveRank("b", 20, 0, 1, state, null);
            for (String bad : java.util.List.of("", ".", "..", "/", "a/b", "a/", "x".repeat(256))) {
                java.io.StringWriter err = new java.io.StringWriter();
                CommandLine cl = TenplexCli.commandLine();
                cl.setErr(new java.io.PrintWriter(err));
                assertEquals(2, cl.execute("rm", "--addr", addr, bad), "rm '" + bad + "': " + err);
                assertTrue(err.toString().startsWith("tenplex: bad job name '"), err.toString());
                assertTrue(err.toString().contains("a job name is 1 to 255 bytes"), err.toString());
            }
            String jobs = run("jobs", "--addr", addr);
            assertTrue(jobs.lines().anyMatch(l -> l.matches("a +- +10 .*step 10")), jobs);
            assertTrue(jobs.lines().anyMatch(l -> l.matches("b +- +20 .*step 20")), jobs);
        }
    }

    @Test
    void verifyAndExport_generations() throws Exception {
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            io.tenplex.client.TenplexClient c = new io.tenplex.client.TenplexClient(addr, null);
            java.nio.ByteBuffer a = java.nio.ByteBuffer.allocate(32).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(32).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < 4; i++) {
                a.putDouble(i + 1.0);
                b.putDouble(i == 2 ? 3.0 + 1e-6 : i + 1.0);
            }
            // generations are written by saving and sealing (only the daemon writes below generations/)
            c.saveRank("v", 1, 0, 1, java.util.Map.of("w", new io.tenplex.client.Tensor("f64", new long[] {4}, a.array())),
                    null);
            c.saveRank("v", 2, 0, 1, java.util.Map.of("w", new io.tenplex.client.Tensor("f64", new long[] {4}, b.array())),
                    null);
            String text = run(1, "verify", "--addr", addr, "v@1", "v@2")
                    + run(0, "verify", "--addr", addr, "v@1", "v@2", "--rtol", "1e-6")
                    + run(0, "export", "--addr", addr, "v@1", "--dtype", "bf16");
            assertTrue(text.contains("0/w.numpy.ndarray"), text);
            assertTrue(text.contains("1 tensors compared (rtol 1.0e-09, atol 0.0e+00): 1 outside tolerance"), text);
            assertTrue(text.contains("all within tolerance"), text);
            assertTrue(text.contains("exported /job/v/generations/1 to /job/v/exports/1-bf16: 1 tensors cast to bf16"), text);
            assertEquals("bf16", c.getTensor("/job/v/exports/1-bf16/0/w.numpy.ndarray", null).dtype());
        }
    }

    @Test
    void kubernetes_badInputFailsClearly_beforeWatchingAnything() throws Exception {
        assertTrue(runErr(2, "kubernetes").contains("--job (or TENPLEX_JOB) is required"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--selector", "app in (gpt)")
                .contains("expected label=value pairs separated by commas (equality selectors only)"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--settle", "-1").contains("--settle must be >= 0"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--jobset", "GPT_1").contains("--jobset 'GPT_1' is not a "
                + "valid name (a DNS label"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--jobset", "gpt", "--replicated-job", "-w").contains(
                "--replicated-job '-w' is not a valid name"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--batch-job", "gpt..1").contains(
                "--batch-job 'gpt..1' is not a valid Job name"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--batch-job", "gpt", "--replicated-job", "workers").contains(
                "--replicated-job is a JobSet's; --batch-job follows a Job"));
        assertTrue(runErr(2, "kubernetes", "--job", "j", "--jobset", "gpt", "--batch-job", "gpt").contains(
                "--jobset and --batch-job exclude each other"));
        int free;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            free = s.getLocalPort();
        }
        String err = runErr(2, "kubernetes", "--job", "j", "--addr", "http://127.0.0.1:" + free);
        assertTrue(err.contains("cannot connect to http://127.0.0.1:" + free + " (is tenplexd running?)"), err);
    }

    @Test
    void run_commandThatCannotStart_isOneLine(@TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 1}]");
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String err = runErr(2, "run", "--addr", "127.0.0.1:" + d.address().getPort(), "--schedule",
                    schedule.toString(), "--", "nosuchbinary", "train.py");
            assertTrue(err.startsWith("tenplex: cannot start the training command 'nosuchbinary': no such file or "
                    + "directory; give an executable after --"), err);
            assertEquals(1, err.strip().lines().count(), err);
        }
    }

    @Test
    void run_jobWithAGenerationOfAnotherConfiguration_isRefusedNamingBoth(@TempDir Path dir) throws Exception {
        Path schedule = Files.writeString(dir.resolve("s.json"), "[{\"step\": 0, \"size\": 2, \"tp\": 2, \"pp\": 1, "
                + "\"dp\": 1}]");
        try (Daemon d = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null))) {
            String addr = "http://127.0.0.1:" + d.address().getPort();
            io.tenplex.client.TenplexClient c = new io.tenplex.client.TenplexClient(addr, null);
            c.saveRank("used", 60, 0, 1, java.util.Map.of("step", 60L), "{\"tp\": 1, \"pp\": 1, \"dp\": 1}");
            String err = runErr(2, "run", "--addr", addr, "--job", "used", "--schedule", schedule.toString(), "--",
                    "nosuchbinary", "train.py");
            assertTrue(err.contains("job used already has generation 60, saved under (T,P,D)=(1,1,1), and the schedule "
                    + "starts with (T,P,D)=(2,1,1)") && err.contains("tenplex rm used"), err);
        }
    }

    /** Runs the CLI in this JVM and returns what it printed on stderr; its exit status must be {@code status}. */
    static String runErr(int status, String... args) {
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cl = TenplexCli.commandLine();
        cl.setErr(new java.io.PrintWriter(err, true));
        assertEquals(status, cl.execute(args), err.toString());
        return err.toString();
    }
}
