package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading a chunked, compressed HDF5 dataset larger than the cache of decoded blocks, in a shuffled
 * read order: each chunk is decoded once per load (its rows that the mount reads are taken together),
 * not once per row, and every rank still reads its rows bit for bit as h5py wrote them.
 */
class ArrayLoadTest {
    private static final int ROWS = 4096;
    private static final int CHUNK_ROWS = 32;
    private static final int CHUNKS = ROWS / CHUNK_ROWS;
    private static final int ROW_BYTES = 64 * 4; // 64 float32
    /**
     * Decodes allowed per load: each chunk once, and a few again where a worker took a row of a chunk
     * just before another worker filled that chunk's rows, and the chunk left the cache in between
     * (reading row by row in the shuffled order decodes about 15 in 16 rows' chunks: 3,800).
     */
    private static final int MAX_DECODES = CHUNKS + CHUNKS / 4;
    /** Chunks the cache holds, of the 128: the 1 MiB dataset is 16 times the cache. */
    private static final int CACHED = 8;
    private static final long CACHE = (long) CACHED * CHUNK_ROWS * ROW_BYTES;
    /** Decodes at least needed per load (chunks still cached from the test before need none). */
    private static final int MIN_DECODES = CHUNKS - CACHED;
    private static final String MAKE = """
            import sys, h5py, numpy as np
            rows, width, chunk = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
            data = np.random.default_rng(7).standard_normal((rows, width), dtype=np.float32)
            with h5py.File(sys.argv[1] + "/rows.h5", "w") as f:
                f.create_dataset("gzip", data=data, chunks=(chunk, width), shuffle=True, compression="gzip")
            open(sys.argv[1] + "/rows.bin", "wb").write(data.tobytes())
            """;

    @TempDir
    static Path dir;
    static byte[] rows;
    static TensorStore store;
    static SourceReader source;
    static DatasetService datasets;

    @BeforeAll
    static void start() throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", MAKE, dir.toString(), "" + ROWS, "" + ROW_BYTES / 4,
                "" + CHUNK_ROWS).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "making the HDF5 file failed (needs python3-h5py): " + out);
        rows = Files.readAllBytes(dir.resolve("rows.bin"));
        store = new TensorStore(new Allocator(64L << 20));
        SourcePolicy policy = SourcePolicy.none().withDataRoots(List.of(dir));
        source = new SourceReader(policy, CACHE);
        datasets = new DatasetService(store.allocator(), source, ShardPeers.NONE, DatasetExecutors.standard(),
                MountHeap.ofMaxHeap().limit());
    }

    @AfterAll
    static void stop() {
        datasets.close();
        store.close();
    }

    @Test
    void shuffledLoad_ofEveryRank_decodesEachChunkOnce() throws Exception {
        MountParams params = new MountParams(0, 64, 2, 3, true, 100);
        long before = source.arrays().blocksDecoded();
        datasets.mount("all", MountRequest.at(url(), params));
        assertRanks("all", params, List.of(0, 1));
        long decoded = source.arrays().blocksDecoded() - before;
        assertTrue(decoded >= MIN_DECODES && decoded <= MAX_DECODES, decoded + " chunks decoded for " + CHUNKS);
        assertEquals(ROWS, datasets.status("all").load().fromSource());
        datasets.unmount("all");
    }

    @Test
    void shuffledLoad_ofOneRankOfTwo_decodesEachChunkOnce_andTakesOnlyItsRows() throws Exception {
        MountParams params = new MountParams(0, 64, 2, 5, true, 100);
        long before = source.arrays().blocksDecoded();
        datasets.mount("half", MountRequest.at(url(), params).withRanks(List.of(1)));
        assertRanks("half", params, List.of(1));
        long decoded = source.arrays().blocksDecoded() - before;
        assertTrue(decoded >= MIN_DECODES && decoded <= MAX_DECODES, decoded + " chunks decoded for " + CHUNKS);
        assertEquals(ROWS / 2, datasets.status("half").load().fromSource());
        datasets.unmount("half");
    }

    @Test
    void remount_atAnotherDataParallelism_takesTheRowsThePreviousMountHolds_andDecodesTheRestOnce() throws Exception {
        MountParams half = new MountParams(0, 64, 2, 9, true, 100);
        datasets.mount("resize", MountRequest.at(url(), half).withRanks(List.of(0)));
        assertRanks("resize", half, List.of(0));
        long before = source.arrays().blocksDecoded();
        MountParams all = new MountParams(0, 64, 1, 9, true, 100);
        datasets.mount("resize", MountRequest.at(url(), all));
        assertRanks("resize", all, List.of(0));
        long decoded = source.arrays().blocksDecoded() - before;
        assertTrue(decoded >= MIN_DECODES && decoded <= MAX_DECODES, decoded + " chunks decoded for " + CHUNKS);
        assertEquals(ROWS / 2, datasets.status("resize").load().fromPreviousMount());
        assertEquals(ROWS / 2, datasets.status("resize").load().fromSource());
        datasets.unmount("resize");
    }

    private static String url() {
        return "hdf5://" + dir.resolve("rows.h5") + "#/gzip";
    }

    private static void assertRanks(String job, MountParams params, List<Integer> ranks) throws Exception {
        assertTrue(datasets.awaitLoaded(job, Duration.ofSeconds(60)));
        assertEquals(null, datasets.status(job).load().error());
        assertTrue(datasets.status(job).load().firstBatchReadyMillis() != null);
        DataPartition p = new DataPartition(ROWS, params);
        for (int r : ranks) {
            ByteArrayOutputStream want = new ByteArrayOutputStream();
            for (int id : p.rankSamples(r)) {
                want.write(Arrays.copyOfRange(rows, id * ROW_BYTES, (id + 1) * ROW_BYTES));
            }
            ViewNode f = datasets.view(job, "dataset/rank-" + r + "/samples");
            assertArrayEquals(want.toByteArray(), datasets.readAsync(f, 0, (int) f.size()).get(), job + " rank " + r);
        }
    }
}
