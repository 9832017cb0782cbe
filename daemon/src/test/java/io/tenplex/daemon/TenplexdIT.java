package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The real daemon process on an ephemeral loopback port: the prototype's Python client forms
 * replayed with Debian's numpy and requests, the token, a clear CLI error, and graceful SIGTERM.
 */
class TenplexdIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private DaemonProcess daemon;

    private String start(String... args) throws IOException {
        daemon = DaemonProcess.start(args);
        return daemon.url();
    }

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
    }

    private int stopGracefully() throws Exception {
        return daemon.signal("TERM");
    }

    @Test
    void pythonClientForms_replayByteForByte() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_compat.py");
        assertEquals(143, stopGracefully()); // 128 + SIGTERM, after the shutdown hook ran
        List<String> log = daemon.log();
        assertTrue(log.stream().anyMatch(l -> l.contains("stopped (released 0 bytes)")), String.join("\n", log));
        assertTrue(log.stream().filter(l -> l.contains("tenplexd starting:")).count() == 1);
    }

    /**
     * A tree written over plain REST is data, never code, for tenplex.load (tests/python/test_hostile_trees.py):
     * a Namespace pickle calling os.system is refused unrun, type tags import nothing and call no class's
     * code, malformed trees raise TenplexError naming the key; then 4000 seeded fuzzed trees load or refuse.
     */
    @Test
    void pythonClient_loadsHostileTreesAsDataOnly() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "64m");
        pythonAgainst(addr, "tests/python/test_hostile_trees.py");
    }

    @Test
    void pythonClient_saveLoadStopAndInstall() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_client.py");
        pythonAgainst(addr, "tests/python/test_stop_flag.py");
        pythonAgainst(addr, "tests/python/test_downtime.py");
        pythonAgainst(addr, "tests/python/test_optimizer_state.py");
        pythonAgainst(addr, "tests/python/test_launch.py");
        pythonAgainst(addr, "tests/python/test_layout_codec.py");
        pythonAgainst(addr, "tests/python/test_generations_load.py");
        pythonAgainst(addr, "tests/python/test_batched_upload.py");
        pythonAgainst(addr, "tests/python/test_plot.py");
        pythonAgainst(addr, "tests/python/test_rehearsal_hold.py");
    }

    /**
     * A save whose model spec contradicts the shards it carries (tests/python/test_save_description.py):
     * refused at the save, over shared memory and over REST, with a message that names the tensor, its
     * partition and both shapes; the same save with the right spec seals.
     */
    @Test
    void pythonSave_withASpecThatContradictsTheShards_isRefusedAtTheSave() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_save_description.py");
        pythonAgainst(addr, java.util.Map.of("TENPLEX_SHM", "0"), "tests/python/test_save_description.py");
    }

    /**
     * The per-pod launcher in live mode (tests/python/test_launch_live.py): two launcher processes as two
     * pods, real resource changes on the daemon and real {@code tenplex.elastic} ranks; grow and shrink keep
     * the surviving ranks' processes, a rank that moves pods or fails during a change relaunches all.
     */
    @Test
    void podLauncher_liveMode_keepsRanksAndFallsBackToRelaunch() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_launch_live.py");
    }

    /**
     * The round-trip suite: every checkpoint of tests/python/state_catalogue.py (torch's optimizers, LR
     * schedulers, RNG states, configs, containers, scalars, views) loads back as torch.load gives it,
     * types and values bit for bit (-0.0, NaN payloads), before and after a resumed step; refusals name
     * the key; every save and load through shared memory in the first pass (no fallback to REST) and over
     * REST in the second ({@code TENPLEX_SHM=0}); complex tensors (c64, c128) bit for bit, range reads, and
     * split by a T change.
     */
    @Test
    void pythonStateTypes_roundTripAsTorchLoad_overSharedMemoryAndRest() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_state_types.py");
        pythonAgainst(addr, java.util.Map.of("TENPLEX_SHM", "0"), "tests/python/test_state_types.py");
        pythonAgainst(addr, "tests/python/test_complex.py");
        pythonAgainst(addr, java.util.Map.of("TENPLEX_SHM", "0"), "tests/python/test_complex.py");
    }

    /**
     * A reconfiguration never drops what a rank saved: a data-parallel-only job with no description
     * goes 2 -> 4 -> 1 ranks with every value of every rank (types included, RNG per rank), and a
     * described model's T change keeps the scheduler, step, epoch and RNG state it does not describe.
     */
    @Test
    void pythonReconfigure_keepsEveryValue_withoutADescriptionForDataParallelChanges() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "512m");
        pythonAgainst(addr, "tests/python/test_reconfigure_state.py");
    }

    /**
     * examples/elastic_dp.py: a CNN with BatchNorm and an nn.Transformer go 2 -> 4 -> 1 data-parallel
     * ranks with no description; each equals the same schedule with torch.save/torch.load bit for bit,
     * the transformer a static run within 1e-9 (the CNN's per-rank BatchNorm cannot).
     */
    @Test
    void pythonElasticDataParallel_cnnAndTransformer_equalTorchSaveSchedule() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_elastic_dp.py");
    }

    /**
     * examples/elastic_transformer_tp.py: an nn.Transformer with a description goes (T,D) = (1,2) ->
     * (2,1) -> (1,1), the daemon splitting and joining its parts; it equals the same schedule with
     * torch.save/torch.load files (parts joined and cut by hand) bit for bit, and a static run within 1e-9.
     */
    @Test
    void pythonElasticTensorParallel_describedTransformer_equalsTorchSaveScheduleAndStaticRun() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_elastic_tp.py");
    }

    @Test
    void pythonClient_sharedMemory_andTheSameOverRest() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_shared_memory.py");
        pythonAgainst(addr, java.util.Map.of("TENPLEX_SHM", "0"), "tests/python/test_generations_load.py");
    }

    /**
     * A reconfiguration's moved state is loaded from the shared memory the move wrote: three data-parallel
     * ranks map the same bytes (one copy for the worker), no load copies or reads over REST, and the
     * reconfiguration's status says the move touched new memory.
     */
    @Test
    void pythonLoad_ofAMovedState_mapsTheMovesOwnMemory_oncePerWorker() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "64m");
        pythonAgainst(addr, "tests/python/test_moved_loads.py");
    }

    /**
     * A pinned load the daemon cannot copy into shared memory (its budget would not stay a quarter free)
     * reads those tensors over REST and says why: the rank's log, last_loaded and its downtime report.
     */
    @Test
    void pythonLoad_overRestForLackOfRoom_saysWhy() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "48m");
        pythonAgainst(addr, "tests/python/test_slow_load.py");
    }

    /**
     * tenplex.describe and partition rules (refusals included), and examples/elastic_encoder.py (a
     * TransformerEncoder classifier) reconfigured (2,1,2) -> (1,2,2) -> (4,1,1) by the daemon with the
     * spec its first save stored: its final state equals its static run's within 1e-9 (fp64).
     */
    @Test
    void pythonDescribe_elasticEncoderWithNoWrittenSpec_equalsStaticRun() throws Exception {
        String addr = start("--port", "0", "--memory-limit", "256m");
        pythonAgainst(addr, "tests/python/test_describe.py");
        pythonAgainst(addr, "tests/python/test_describe_elastic.py");
    }

    @Test
    void killedDaemon_leavesNoSharedMemoryFiles_andOrphansOfEarlierVersionsAreRemoved(
            @org.junit.jupiter.api.io.TempDir Path shm) throws Exception {
        String addr = start("--port", "0", "--memory-limit", "64m", "--shm-dir", shm.toString());
        HttpClient http = HttpClient.newHttpClient();
        String reserve = "{\"tensors\":[{\"path\":\"w.numpy.ndarray\",\"dtype\":\"f32\",\"shape\":[1000,1000]}]}";
        assertEquals(201, http.send(HttpRequest.newBuilder(URI.create(addr + "/api/v1/jobs/k/shared/saves/0"))
                .POST(HttpRequest.BodyPublishers.ofString(reserve)).build(), BodyHandlers.discarding()).statusCode());
        assertEquals(0, java.nio.file.Files.list(shm).count()); // a memory file of the process: it dies with it
        assertEquals(137, daemon.signal("KILL"));
        java.nio.file.Files.createFile(shm.resolve("tenplex-999999999-5-1")); // what an earlier version's killed daemon left
        start("--port", "0", "--memory-limit", "64m", "--shm-dir", shm.toString());
        assertEquals(0, java.nio.file.Files.list(shm).count());
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("removed 1 orphaned shared-memory segments")),
                daemon.log().toString());
    }

    /** Runs a Python test script against the daemon at {@code addr}; it must exit 0 and end with OK. */
    private static void pythonAgainst(String addr, String script) throws Exception {
        pythonAgainst(addr, java.util.Map.of(), script);
    }

    private static void pythonAgainst(String addr, java.util.Map<String, String> env, String script) throws Exception {
        java.util.Map<String, String> all = new java.util.HashMap<>(env);
        all.put("TENPLEX_ADDR", addr);
        PythonScripts.run(PythonScripts.HOST, all, script);
    }

    @Test
    void token_guardsEverythingButHealth() throws Exception {
        String addr = start("--port", "0", "--token", "abc", "--memory-limit", "64m");
        HttpClient http = HttpClient.newHttpClient();
        assertEquals(200, http.send(HttpRequest.newBuilder(URI.create(addr + "/api/v1/health")).build(),
                BodyHandlers.discarding()).statusCode());
        assertEquals(401, http.send(HttpRequest.newBuilder(URI.create(addr + "/query?path=/x")).build(),
                BodyHandlers.discarding()).statusCode());
        assertEquals(404, http.send(HttpRequest.newBuilder(URI.create(addr + "/query?path=/x"))
                .header("Authorization", "Bearer abc").build(), BodyHandlers.discarding()).statusCode());
        stopGracefully();
    }

    private static boolean mounted(Path dir) throws IOException {
        return java.nio.file.Files.readAllLines(Path.of("/proc/self/mounts")).stream()
                .anyMatch(l -> l.split(" ")[1].equals(dir.toString()));
    }

    @Test
    void mount_survivesACrashedDaemon_andIsReleasedOnShutdown(@org.junit.jupiter.api.io.TempDir Path tmp)
            throws Exception {
        Path mnt = tmp.resolve("mnt");
        String addr = start("--port", "0", "--memory-limit", "64m", "--mount", mnt.toString());
        HttpClient http = HttpClient.newHttpClient();
        http.send(HttpRequest.newBuilder(URI.create(addr + "/api/v1/files/job/a/note.txt"))
                .PUT(HttpRequest.BodyPublishers.ofString("hello")).build(), BodyHandlers.discarding());
        assertEquals("hello", java.nio.file.Files.readString(mnt.resolve("job/a/note.txt")));
        assertEquals(137, daemon.signal("KILL")); // leaves a dead mount behind
        assertTrue(mounted(mnt));
        start("--port", "0", "--memory-limit", "64m", "--mount", mnt.toString());
        assertTrue(daemon.log().stream().anyMatch(l -> l.contains("removing the stale mount")), daemon.log().toString());
        assertTrue(java.nio.file.Files.isDirectory(mnt.resolve(".")));
        assertEquals(List.of(), java.nio.file.Files.list(mnt).toList()); // a fresh, empty store
        assertEquals(143, stopGracefully());
        assertTrue(!mounted(mnt), "mount left behind");
    }

    @Test
    void badOption_isAClearCliError() throws Exception {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), Tenplexd.class.getName(), "--memory-limit", "banana")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(2, p.waitFor());
        assertTrue(out.contains("tenplexd: memory limit 'banana' is not a size"), out);
        assertTrue(new File(ROOT.toFile(), "bin/tenplexd").canExecute());
    }
}
