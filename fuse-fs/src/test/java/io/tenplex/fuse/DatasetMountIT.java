package io.tenplex.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.TensorStore;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.IndexBuilders;
import io.tenplex.datasets.LoadStatus;
import io.tenplex.datasets.MountInfo;
import io.tenplex.datasets.MountRequest;
import io.tenplex.store.memory.Allocator;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Dataset rank views on a real FUSE mount, read by the Python reader (both layouts, and the torch
 * IterableDataset when torch is installed), across a change of data parallelism, with fio random
 * reads and read-only errors from shell tools.
 */
class DatasetMountIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int RECORD = 24;

    @TempDir
    Path tmp;
    private TensorStore store;
    private DatasetService datasets;
    private TenplexFuse fuse;
    private Path mnt;

    @BeforeEach
    void mount() throws Exception {
        store = new TensorStore(new Allocator(256L << 20));
        datasets = new DatasetService(store.allocator(), io.tenplex.datasets.SourcePolicy.none().withDataRoots(List.of(tmp)),
                io.tenplex.datasets.ShardPeers.NONE, io.tenplex.datasets.DatasetExecutors.standard());
        fuse = new TenplexFuse(store, datasets);
        mnt = tmp.resolve("mnt");
        fuse.mountAt(mnt);
    }

    @AfterEach
    void unmount() {
        fuse.close();
        assertEquals(0, fuse.logic().openHandles());
        datasets.close();
        store.close();
    }

    /** Two record files whose samples start with their global id (int64, little-endian). */
    private String index(int first, int second) throws Exception {
        List<DatasetIndex.File> files = new ArrayList<>();
        int id = 0;
        for (int n : new int[] {first, second}) {
            ByteBuffer b = ByteBuffer.allocate(n * RECORD).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++, id++) {
                b.putLong(id);
                for (int j = 8; j < RECORD; j++) {
                    b.put((byte) (id * 31 + j));
                }
            }
            Path f = tmp.resolve("part" + files.size() + ".bin");
            Files.write(f, b.array());
            files.add(IndexBuilders.build(f, IndexBuilders.Format.RECORDS, RECORD));
        }
        StringWriter w = new StringWriter();
        new DatasetIndex(files).write(w);
        return w.toString();
    }

    private JsonNode readAll(String job, int n) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/usr/bin/python3", ROOT.resolve("tests/python/read_dataset.py").toString(),
                mnt.toString(), job, Integer.toString(n));
        Process p = pb.redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return JSON.readTree(out);
    }

    /** What every rank must read after a mount: rank r's slice of each global batch. */
    private static void assertPartition(JsonNode read, int samples, MountParams params) {
        DataPartition p = new DataPartition(samples, params);
        int k = params.rankSlice();
        for (String layout : new String[] {"simple", "prototype"}) {
            for (int r = 0; r < params.dpSize(); r++) {
                JsonNode batches = read.path(layout).get(r);
                assertEquals(p.batches(), batches.size(), layout + " rank " + r);
                for (int b = 0; b < p.batches(); b++) {
                    int[] g = p.globalBatch(b);
                    List<Integer> want = new ArrayList<>();
                    for (int i = Math.min(r * k, g.length); i < Math.min((r + 1) * k, g.length); i++) {
                        want.add(g[i]);
                    }
                    List<Integer> got = new ArrayList<>();
                    batches.get(b).forEach(x -> got.add(x.asInt()));
                    assertEquals(want, got, layout + " rank " + r + " batch " + b);
                }
            }
        }
    }

    @Test
    void pythonReadsEveryRank_inBothLayouts_andAResizeContinuesTheSameOrder() throws Exception {
        String index = index(70, 33); // 103 samples, G = 12: 8 batches, 7 dropped
        var m = MountRequest.inline(index, new MountParams(0, 12, 2, 5, true, 7));
        MountInfo first = datasets.mount("j", m).mount();
        assertEquals(8, first.batches());
        assertEquals(7, first.dropped());
        JsonNode read = readAll("j", 2);
        assertPartition(read, 103, new MountParams(0, 12, 2, 5, true, 7));
        if (!read.path("torch").isNull()) {
            assertTrue(read.path("torch").asBoolean(), "the torch IterableDataset read rank 0 differently");
        }
        // resize at step 3: N = 5 does not divide G = 12 (k = 3: rank 4 reads nothing); samples come from the
        // previous mount
        datasets.mount("j", MountRequest.inline(index, new MountParams(36, 12, 5, 5, true, 7)));
        JsonNode after = readAll("j", 5);
        assertPartition(after, 103, new MountParams(36, 12, 5, 5, true, 7));
        // every sample is readable before the loader has counted it: wait for the end of loading
        assertTrue(datasets.awaitLoaded("j", java.time.Duration.ofSeconds(30)));
        LoadStatus load = datasets.status("j").load();
        assertEquals(60, load.fromPreviousMount(), load.toString()); // 5 batches of 12, none re-read
        assertEquals(0, load.fromSource(), load.toString());
        // the prototype layout's entry points
        assertEquals("/job/j/progress-36-cluster-of-5.txt\n", Files.readString(mnt.resolve("job/j/head.txt")));
        assertEquals("/job/j/progress/36/cluster-of-5/rank-004\n",
                Files.readAllLines(mnt.resolve("job/j/progress-36-cluster-of-5.txt")).get(4) + "\n");
        assertEquals("0 5\n", Files.readString(mnt.resolve("job/j/progress/36/cluster-of-5/rank-004/batch-sizes.txt")));
        // read-only, as shell tools see it
        assertTrue(FuseMountIT.sh(1, "touch", mnt.resolve("job/j/dataset/new").toString()).contains("Read-only file system"));
        assertTrue(FuseMountIT.sh(1, "rm", mnt.resolve("job/j/head.txt").toString()).contains("Read-only file system"));
        assertTrue(FuseMountIT.sh(1, "mkdir", mnt.resolve("job/j/progress/x").toString()).contains("Read-only file system"));
        // the job directory itself stays writable for checkpoints
        Files.writeString(mnt.resolve("job/j/notes.txt"), "ok");
        assertTrue(List.of(FuseMountIT.sh(0, "ls", mnt.resolve("job/j").toString()).split("\\s+")).containsAll(
                List.of("head.txt", "progress", "dataset", "notes.txt")));
    }

    /**
     * A view file replaced by a longer one under the same path (mount.json after a remount at a progress with more
     * digits) reads whole right away, while another reader keeps the kernel's cached attributes fresh: the kernel must
     * not cut the new bytes at the size it saw before (it did in about a third of the rounds).
     */
    @Test
    void aReplacedViewFileReadsWhole_whileAnotherReaderStatsIt() throws Exception {
        String index = index(70, 33);
        Path info = mnt.resolve("job/r/dataset/mount.json");
        datasets.mount("r", MountRequest.inline(index, new MountParams(0, 12, 2, 5, true, 7)));
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        Thread stat = new Thread(() -> {
            while (!done.get()) {
                try {
                    Files.size(info);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        });
        stat.start();
        try {
            for (int i = 0; i < 200; i++) {
                long progress = i % 2 == 0 ? 12 : 0;
                datasets.mount("r", MountRequest.inline(index, new MountParams(progress, 12, 2, 5, true, 7)));
                String text = Files.readString(info);
                assertEquals(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(datasets.status("r").mount()), text,
                        "round " + i);
            }
        } finally {
            done.set(true);
            stat.join();
        }
    }

    @Test
    void fioRandomReads_onARankPartition() throws Exception {
        datasets.mount("f", MountRequest.inline(index(4096, 4096), new MountParams(0, 64, 2, 1, true, 1024)));
        Path samples = mnt.resolve("job/f/dataset/rank-1/samples");
        assertEquals(4096L * RECORD, Files.size(samples));
        String out = FuseMountIT.sh(0, "fio", "--name=rand", "--filename=" + samples, "--readonly", "--rw=randread", "--bs=4k",
                "--ioengine=psync", "--numjobs=4", "--size=" + Files.size(samples), "--io_size=4m", "--group_reporting",
                "--output-format=json");
        JsonNode job = JSON.readTree(out.substring(out.indexOf('{'))).path("jobs").get(0);
        assertEquals(0, job.path("error").asInt());
        assertEquals(4 * 1024, job.path("read").path("total_ios").asInt(), out);
    }
}
