package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Test (d) of the checkpoint tiers: the elastic PyTorch job (examples/elastic_gpt.py, gloo, float64,
 * Adam) survives the loss of a worker mid-training. Four tenplexd processes, one per worker, started
 * with {@code --peers}, a FUSE mount and the dataset's data root; the job keeps one partner copy per
 * worker ({@code partners: 1}). tests/python/elastic_loss.py launches rank r of (T,P,D) = (2,2,1) on
 * worker r against that worker's daemon and FUSE view; the job saves generation 10 and trains on to
 * step 20, where it holds. Worker 3's daemon and rank are then killed with SIGKILL by PID (the other
 * ranks, whose world is broken, are ended by PID), and the failure is reported as a resource change
 * onto the survivors with {@code "recover": true}: (2,1,2) on workers 0 (two devices), 1 and 2. Rank 3's
 * state of generation 10 comes from its partner copy on worker 0; the relaunched ranks load generation
 * 10, remount the dataset at its position (step 10's) and train to step 60.
 *
 * <p>What is compared (tests/python/check_elastic.py): steps 11 to 20 ran twice, and their first run
 * was lost with the worker. The training is deterministic given the state and the samples of a step,
 * so the rerun from generation 10 is the same mathematical computation as the static run's steps 11
 * to 20; the log's relaunch at step 10 supersedes the lost records. The final parameters and Adam
 * moments (gathered to (1,1,1) by the daemon) must equal those of a static (1,1,1) run of the same
 * script within 1e-9 relative, every step's loss too, and the samples read (from step 10 on, through
 * the survivors' remounted views) must be the static run's, every sample of the epoch exactly once.
 */
class ElasticLossIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final int LOST = 3;
    private final List<DaemonProcess> daemons = new ArrayList<>();
    private final List<Path> mounts = new ArrayList<>();
    private final ObjectMapper json = new ObjectMapper();

    @AfterEach
    void stop() throws Exception {
        for (DaemonProcess d : daemons) {
            d.close();
        }
        for (Path m : mounts) { // a daemon killed with SIGKILL leaves its mount behind
            new ProcessBuilder("fusermount", "-u", "-z", m.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
        }
    }

    private void startFour(Path dir) throws Exception {
        DaemonProcess.Peers peers = DaemonProcess.reservePeers(4);
        for (int w = 0; w < 4; w++) {
            Path mnt = Files.createDirectories(dir.resolve("mnt" + w));
            mounts.add(mnt);
            daemons.add(DaemonProcess.start("--port", peers.port(w), "--memory-limit", "256m", "--peers", peers.arg(),
                    "--mount", mnt.toString(), "--data-root",
                    dir.resolve("data").toString()));
        }
    }

    private String setup(Path dir) {
        ObjectNode s = json.createObjectNode();
        ArrayNode ds = s.putArray("daemons");
        for (int w = 0; w < daemons.size(); w++) {
            ds.addObject().put("url", daemons.get(w).url()).put("pid", daemons.get(w).pid())
                    .put("mount", mounts.get(w).toString());
        }
        s.put("example", ROOT.resolve("examples/elastic_gpt.py").toString());
        s.put("dataset", dir.resolve("data/index.txt").toString());
        s.put("out", dir.resolve("out").toString());
        s.put("steps", 60).put("saveAt", 10).put("holdAt", 20).put("lost", LOST);
        ObjectNode r = s.putObject("recover").put("tp", 2).put("pp", 1).put("dp", 2);
        ArrayNode devices = r.putArray("devices");
        for (int[] d : new int[][] {{0, 0}, {0, 1}, {1, 0}, {2, 0}}) {
            devices.addArray().add(d[0]).add(d[1]);
        }
        return s.toString();
    }

    private static String python(Path dir, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/python3"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        System.out.println(out);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    @Test
    void elasticJob_loses_a_worker_recoversOntoTheSurvivors_equalsStaticRun(@TempDir Path dir) throws Exception {
        python(dir, ROOT.resolve("examples/elastic_gpt.py").toString(), "--make-data", dir.resolve("data").toString());
        startFour(dir);
        Files.writeString(dir.resolve("setup.json"), setup(dir));
        String run = python(dir, ROOT.resolve("tests/python/elastic_loss.py").toString(), "setup.json");
        assertEquals(137, daemons.get(LOST).awaitExit(), "worker 3's daemon was killed with SIGKILL");
        String line = run.lines().filter(l -> l.startsWith("recovered: ")).findFirst().orElseThrow();
        JsonNode status = json.readTree(line.substring("recovered: ".length()));
        assertEquals(10, status.path("generation").asLong(), status.toString());
        assertEquals("partner copy on worker 0 (worker 3 lost)",
                status.path("reconfiguration").path("sources").path("3").asText(), status.toString());
        assertTrue(status.toString().contains("recovering generation 10 without waiting for a save"), status.toString());
        String check = python(dir, ROOT.resolve("tests/python/check_elastic.py").toString(), daemons.get(0).url(),
                dir.resolve("out").toString(), "static", "elastic", dir.resolve("loss.png").toString());
        assertTrue(check.strip().endsWith("OK"), check);
        assertTrue(check.contains("\"configs\": [[2, 2, 1], [2, 1, 2]]"), check);
        assertLostStepsReread(dir.resolve("out/elastic.jsonl"));
    }

    /**
     * The relaunch starts from step 10, and steps 11 to 20 (lost with the worker) were read again from
     * the survivors' remounted views: the same samples as in the lost run, each step's exactly.
     */
    private void assertLostStepsReread(Path log) throws Exception {
        List<JsonNode> starts = new ArrayList<>();
        java.util.Map<Long, List<String>> ids = new java.util.TreeMap<>();
        for (String l : Files.readAllLines(log)) {
            JsonNode r = json.readTree(l);
            if (r.path("event").asText().equals("start")) {
                starts.add(r);
            } else if (r.has("loss")) {
                ids.computeIfAbsent(r.path("step").asLong(), k -> new ArrayList<>()).add(r.path("ids").toString());
            }
        }
        assertEquals(2, starts.size(), starts.toString());
        assertEquals(10, starts.get(1).path("step").asLong(), "the relaunch starts from the recovered generation");
        for (var e : ids.entrySet()) {
            boolean lost = e.getKey() > 10 && e.getKey() <= 20;
            assertEquals(lost ? 2 : 1, e.getValue().size(), "step " + e.getKey() + ": " + e.getValue());
            assertEquals(1, new java.util.HashSet<>(e.getValue()).size(), "step " + e.getKey() + ": " + e.getValue());
        }
    }
}
