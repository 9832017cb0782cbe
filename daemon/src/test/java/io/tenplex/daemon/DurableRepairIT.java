package io.tenplex.daemon;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.ptc.MegatronLayout;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.jobs.JobRoutes;
import java.io.RandomAccessFile;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * L4 repaired from L2, with real processes: four daemons started with {@code --peers}, each with its
 * own checkpoint directory, a job saved with one partner copy per worker and flushed; worker 1's
 * daemon killed with SIGKILL, a block of its pack damaged on disk, and the daemon started again on
 * its directory. With worker 2 (which holds the copy of worker 1's rank) up, the block is read from
 * that copy, checked, written back, and the generation is served bit for bit; with worker 2 killed
 * too, the generation is not served, as without a repair.
 */
class DurableRepairIT {
    private static final MegatronLayout.Shape GPT = MegatronLayout.Shape.gpt(4, 64, 8, 1000, 16);
    private static final ParallelConfig FROM = ParallelConfig.of(2, 1, 2);
    private final Model model = MegatronLayout.model(GPT);
    private final ProcessCluster cluster = new ProcessCluster(model);
    private final List<String> args = new ArrayList<>();
    @TempDir
    Path dirs;

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    @Test
    void damagedBlock_isReadFromThePartnerCopy_writtenBack_andServedBitForBit() throws Exception {
        assertRepaired(saveFlushAndKillWorker1("{\"partners\": 1}", "partners"), "read from the partner copy on worker 2");
    }

    /** Erasure-coded groups of 3 with one parity block (on worker 3): worker 1's ranks rebuilt from parity. */
    @Test
    void damagedBlock_isRebuiltFromParity_writtenBack_andServedBitForBit() throws Exception {
        assertRepaired(saveFlushAndKillWorker1("{\"groupSize\": 3, \"parity\": 1}", "erasure"),
                "worker 1's ranks rebuilt from parity to repair it");
    }

    /** Flips a byte of worker 1's pack, restarts it; the block is repaired as {@code logged} says. */
    private void assertRepaired(Map<String, byte[]> before, String logged) throws Exception {
        Path pack = dirs.resolve("w1/jobs/j/10/blocks.pack");
        long at;
        byte original;
        try (RandomAccessFile f = new RandomAccessFile(pack.toFile(), "rw")) {
            at = f.length() / 2;
            f.seek(at);
            original = f.readByte();
            f.seek(at);
            f.writeByte(original ^ 0x5a); // one bit pattern flipped in the middle of the pack
        }
        DaemonProcess restarted = restart(1);
        List<String> log = restarted.log();
        assertTrue(log.stream().anyMatch(l -> l.contains(logged)), String.join("\n", log));
        assertTrue(indexOf(log, "restored durable generation job=j step=10") < indexOf(log, "ready on"),
                String.join("\n", log));
        assertFalse(log.stream().anyMatch(l -> l.contains("DAMAGED")), String.join("\n", log));
        assertTree(before, rankTree(restarted));
        try (RandomAccessFile f = new RandomAccessFile(pack.toFile(), "r")) {
            f.seek(at);
            assertEquals(original, f.readByte(), "the repaired block is written back into the pack");
        }
    }

    @Test
    void damagedBlock_withThePartnerDown_isNotServed() throws Exception {
        saveFlushAndKillWorker1("{\"partners\": 1}", "partners");
        assertEquals(137, cluster.daemons.get(2).signal("KILL")); // the only copy of worker 1's rank
        try (RandomAccessFile f = new RandomAccessFile(dirs.resolve("w1/jobs/j/10/blocks.pack").toFile(), "rw")) {
            f.setLength(f.length() - 100);
        }
        DaemonProcess restarted = restart(1);
        List<String> log = restarted.log();
        assertTrue(log.stream().anyMatch(l -> l.contains("DAMAGED") && l.contains("step=10")), String.join("\n", log));
        assertTrue(log.stream().anyMatch(l -> l.contains("no daemon has a good copy")), String.join("\n", log));
        HttpResponse<byte[]> load = cluster.send(HttpRequest.newBuilder(URI.create(restarted.url() + JobRoutes.PREFIX
                + "j/load/1")));
        assertNotEquals(200, load.statusCode(), new String(load.body(), StandardCharsets.UTF_8));
    }

    /** Four daemons with {@code tiers}, generation 10 saved, at {@code level} and flushed; worker 1's rank tree before the kill. */
    private Map<String, byte[]> saveFlushAndKillWorker1(String tiers, String level) throws Exception {
        startFour();
        for (DaemonProcess d : cluster.daemons) {
            assertEquals(200, send(d, "PUT", JobRoutes.PREFIX + "j/tiers", tiers).statusCode());
        }
        cluster.save("j", Ptc.packed(model, FROM, 1), 0);
        String config = ProcessCluster.config(FROM, 1, 0);
        for (int rank = 0; rank < 4; rank++) {
            HttpResponse<byte[]> r = send(cluster.daemons.get(rank), "POST", JobRoutes.PREFIX + "j/saves/10/ranks/" + rank,
                    "{\"world\": 4, \"config\": " + config + "}");
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
        }
        for (DaemonProcess d : cluster.daemons) {
            awaitLevels(d, level, "durable");
        }
        Map<String, byte[]> before = rankTree(cluster.daemons.get(1));
        assertEquals(137, cluster.daemons.get(1).signal("KILL"));
        return before;
    }

    private void startFour() throws Exception {
        List<ServerSocket> held = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            held.add(new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()));
        }
        StringBuilder peers = new StringBuilder();
        for (int w = 0; w < 4; w++) {
            peers.append(w > 0 ? "," : "").append(w).append("=127.0.0.1:").append(held.get(w).getLocalPort());
        }
        for (ServerSocket s : held) {
            args.add(Integer.toString(s.getLocalPort()));
            s.close();
        }
        args.add(peers.toString());
        for (int w = 0; w < 4; w++) {
            cluster.daemons.add(start(w));
        }
    }

    private DaemonProcess start(int w) throws Exception {
        return DaemonProcess.start("--port", args.get(w), "--memory-limit", "256m", "--peers", args.get(4),
                "--checkpoint-dir", dirs.resolve("w" + w).toString());
    }

    /** Starts worker {@code w}'s daemon again on its port and directory. */
    private DaemonProcess restart(int w) throws Exception {
        DaemonProcess d = start(w);
        cluster.daemons.set(w, d);
        return d;
    }

    /** Polls (every 100 ms, up to 60 s) until generation 10 lists every one of {@code levels} on {@code d}. */
    private void awaitLevels(DaemonProcess d, String... levels) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            String got = "";
            for (JsonNode g : cluster.json(cluster.get(d, JobRoutes.PREFIX + "j/generations")).path("generations")) {
                got = g.path("step").asLong() == 10 ? g.path("levels").toString() : got;
            }
            String now = got;
            if (java.util.Arrays.stream(levels).allMatch(now::contains)) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, d.url() + " reached only " + now + " of " + List.of(levels));
            java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L); // polling a remote condition
        }
    }

    /** Every file and tensor under {@code /job/j/generations/10/1} on {@code d}, by path. */
    private Map<String, byte[]> rankTree(DaemonProcess d) throws Exception {
        Map<String, byte[]> out = new TreeMap<>();
        String dir = "/job/j/generations/10/1";
        for (JsonNode e : cluster.json(cluster.get(d, "/api/v1/dirs" + dir + "?recursive=true")).path("entries")) {
            String type = e.path("type").asText();
            if (type.equals("tensor") || type.equals("file")) {
                out.put(e.path("path").asText() + " " + type + " " + e.path("dtype").asText() + " "
                        + e.path("shape"), cluster.get(d, "/api/v1/" + type + "s" + e.path("path").asText()));
            }
        }
        assertTrue(out.size() >= 4, "rank 1's tree: " + out.keySet());
        return out;
    }

    private static void assertTree(Map<String, byte[]> expected, Map<String, byte[]> actual) {
        assertEquals(expected.keySet(), actual.keySet());
        expected.forEach((k, v) -> assertArrayEquals(v, actual.get(k), k));
    }

    private HttpResponse<byte[]> send(DaemonProcess d, String method, String path, String body) throws Exception {
        return cluster.send(HttpRequest.newBuilder(URI.create(d.url() + path)).method(method,
                HttpRequest.BodyPublishers.ofString(body)));
    }

    private static int indexOf(List<String> log, String text) {
        for (int i = 0; i < log.size(); i++) {
            if (log.get(i).contains(text)) {
                return i;
            }
        }
        throw new AssertionError("no log line with '" + text + "':\n" + String.join("\n", log));
    }
}
