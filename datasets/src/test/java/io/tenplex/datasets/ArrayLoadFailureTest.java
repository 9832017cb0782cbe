package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chunk that cannot be decoded after the mount was accepted (only the first is decoded then): the
 * loader gives its rows up at once instead of retrying them forever, the load ends {@code failed}
 * with the reason, reads of those rows fail promptly (502), and every other row still loads.
 */
class ArrayLoadFailureTest {
    private static final int ROW_BYTES = 16; // 4 int32
    private static final String MAKE = """
            import sys, h5py, numpy as np
            d = sys.argv[1]
            data = np.arange(64 * 4, dtype="<i4").reshape(64, 4)
            with h5py.File(d + "/bad.h5", "w") as f:
                f.create_dataset("gzip", data=data, chunks=(8, 4), compression="gzip")
                f.create_dataset("fletcher", data=data, chunks=(8, 4), fletcher32=True)
                at = [f["gzip"].id.get_chunk_info(5), f["fletcher"].id.get_chunk_info(2)]
            b = bytearray(open(d + "/bad.h5", "rb").read())
            for i in range(at[0].size):
                b[at[0].byte_offset + i] = 0x55
            b[at[1].byte_offset + 5] ^= 0x01
            open(d + "/bad.h5", "wb").write(b)
            open(d + "/rows.bin", "wb").write(data.tobytes())
            """;

    @TempDir
    static Path dir;
    static byte[] rows;
    static TensorStore store;
    static DatasetService datasets;

    @BeforeAll
    static void start() throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", MAKE, dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "making the HDF5 file failed (needs python3-h5py): " + out);
        rows = Files.readAllBytes(dir.resolve("rows.bin"));
        store = new TensorStore(new Allocator(64L << 20));
        datasets = new DatasetService(store.allocator(), SourcePolicy.none().withDataRoots(List.of(dir)), ShardPeers.NONE,
                DatasetExecutors.standard());
    }

    @AfterAll
    static void stop() {
        datasets.close();
        store.close();
    }

    @Test
    void aCorruptDeflateChunk_failsTheLoad_andItsReads_notTheOtherRows() throws Exception {
        assertLoadFails("gzip", 40, "rows 40..48 cannot be decoded");
    }

    @Test
    void aFletcher32Mismatch_afterTheMount_failsTheLoad_andItsReads() throws Exception {
        assertLoadFails("fletcher", 16, "rows 16..24: chunk [16, 0]: Fletcher-32 checksum");
    }

    private static void assertLoadFails(String dataset, int badRow, String why) throws Exception {
        String url = "hdf5://" + dir.resolve("bad.h5") + "#/" + dataset;
        datasets.mount(dataset, MountRequest.at(url, new MountParams(0, 64, 1, 0, false, 1024)));
        assertTrue(datasets.awaitLoaded(dataset, Duration.ofSeconds(30)), "the load never ended");
        LoadStatus load = datasets.status(dataset).load();
        assertEquals("failed", load.state(), load.toString());
        assertTrue(load.error().contains(why) && load.error().contains(url), load.error());
        assertTrue(load.error().contains("and 7 more samples"), load.error()); // the chunk's 8 rows
        assertEquals(56, load.samplesLoaded());
        ViewNode f = datasets.view(dataset, "dataset/rank-0/samples");
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> datasets.readAsync(f, (long) badRow * ROW_BYTES, ROW_BYTES).get(10, TimeUnit.SECONDS));
        StoreException refused = assertInstanceOf(StoreException.class, e.getCause());
        assertEquals(StoreException.Kind.BAD_GATEWAY, refused.kind());
        assertTrue(refused.getMessage().contains(why), refused.getMessage());
        int good = badRow + 8; // the next chunk's rows
        byte[] got = datasets.readAsync(f, (long) good * ROW_BYTES, 8 * ROW_BYTES).get(10, TimeUnit.SECONDS);
        assertArrayEquals(Arrays.copyOfRange(rows, good * ROW_BYTES, (good + 8) * ROW_BYTES), got);
        datasets.unmount(dataset);
    }
}
