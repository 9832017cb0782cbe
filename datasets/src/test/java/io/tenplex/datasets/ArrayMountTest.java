package io.tenplex.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.datasets.hdf5.ArrayFiles;
import io.tenplex.datasets.hdf5.Hdf5Sources;
import io.tenplex.datasets.netcdf.ClassicSources;
import io.tenplex.ptc.data.DataPartition;
import io.tenplex.ptc.data.DatasetIndex;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.io.ByteArrayOutputStream;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HDF5 datasets and NetCDF-4 and classic variables mounted as datasets: every rank's view holds its
 * rows of the partition, bit for bit as h5py and netCDF4 read them (a classic file's big-endian, as
 * stored); a bad file or name is refused with nothing mounted and no heap held.
 */
class ArrayMountTest {
    @TempDir
    static Path dir;
    static Map<String, ArrayFiles.Array> arrays;
    static TensorStore store;
    static DatasetService datasets;

    @BeforeAll
    static void start() throws Exception {
        arrays = ArrayFiles.make(dir).stream().collect(Collectors.toMap(ArrayFiles.Array::id, Function.identity()));
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
    void aChunkedGzipDataset_mountedByItsUrl_givesEveryRankItsRows() throws Exception {
        ArrayFiles.Array a = arrays.get("h5_gzip_f64"); // 101 rows, chunks of 8, G = 7, N = 3 (k = 3, rank 2 reads 1)
        MountParams params = new MountParams(14, 7, 3, 5, true, 4);
        datasets.mount("g", MountRequest.at(a.url(), params));
        assertRanks("g", params, List.of(a));
        datasets.unmount("g");
    }

    @Test
    void anIndexOfSeveralArrays_hdf5AndNetcdf_isOneDataset() throws Exception {
        List<ArrayFiles.Array> parts = List.of(arrays.get("nc_temp"), arrays.get("nc_counts"));
        List<DatasetIndex.File> files = new ArrayList<>();
        try (Hdf5Sources s = new Hdf5Sources(Path::of)) {
            for (ArrayFiles.Array a : parts) {
                files.add(s.index(a.url(), x -> { }));
            }
        }
        StringWriter w = new StringWriter();
        new DatasetIndex(files).write(w);
        MountParams params = new MountParams(0, 6, 2, 3, true, 5);
        datasets.mount("n", MountRequest.inline(w.toString(), params));
        assertRanks("n", params, parts);
        datasets.unmount("n");
    }

    @Test
    void remountingAJob_withAnotherArray_copiesNothingFromThePreviousMount() throws Exception {
        MountParams params = new MountParams(0, 4, 2, 1, true, 3);
        datasets.mount("r", MountRequest.at(arrays.get("nc_temp").url(), params)); // rows of 80 bytes
        assertTrue(datasets.awaitLoaded("r", Duration.ofSeconds(30)));
        datasets.mount("r", MountRequest.at(arrays.get("nc_counts").url(), params)); // rows of 8 bytes, same ids
        assertRanks("r", params, List.of(arrays.get("nc_counts")));
        assertEquals(0, datasets.status("r").load().fromPreviousMount());
        datasets.unmount("r");
    }

    @Test
    void aNetcdfClassicVariable_byUrl_andInAnIndexWithNetcdf4_isServedAsStored() throws Exception {
        String url = "netcdf://" + dir.resolve("bad/classic.nc") + "#v"; // CDF-1, float32 1, 2, 3: big-endian
        byte[] be = java.nio.ByteBuffer.allocate(12).putFloat(1).putFloat(2).putFloat(3).array();
        ArrayFiles.Array classic = new ArrayFiles.Array("classic", url, 3, 4, be);
        MountParams one = new MountParams(0, 1, 1, 0, false, 4);
        datasets.mount("c", MountRequest.at(url, one));
        assertRanks("c", one, List.of(classic));
        List<ArrayFiles.Array> parts = List.of(arrays.get("nc_counts"), classic);
        List<DatasetIndex.File> files = new ArrayList<>();
        try (Hdf5Sources h = new Hdf5Sources(Path::of); ClassicSources c = new ClassicSources(Path::of)) {
            files.add(h.index(parts.get(0).url(), x -> { }));
            files.add(c.index(url, x -> { }));
        }
        StringWriter w = new StringWriter();
        new DatasetIndex(files).write(w);
        MountParams params = new MountParams(0, 4, 2, 3, true, 5);
        datasets.mount("c", MountRequest.inline(w.toString(), params));
        assertRanks("c", params, parts);
        datasets.unmount("c");
    }

    @Test
    void badFilesAndNames_areRefused_withNothingMounted() {
        long heap = datasets.heapReserved();
        MountParams params = new MountParams(0, 2, 1, 0, false, 4);
        for (String url : List.of("hdf5://" + dir.resolve("arrays.h5") + "#/missing", "hdf5://" + dir.resolve("bad/truncated.h5")
                + "#/contig_f32", "hdf5://" + dir.resolve("bad/notes.h5") + "#/x", "hdf5://" + dir.resolve("bad/scaleoffset.h5")
                + "#/x", "hdf5://" + dir.resolve("bad/classic.nc") + "#/v", "netcdf://" + dir.resolve("bad/classic.nc")
                + "#w")) {
            assertThrows(IllegalArgumentException.class, () -> datasets.mount("bad", MountRequest.at(url, params)), url);
        }
        StoreException outside = assertThrows(StoreException.class,
                () -> datasets.mount("bad", MountRequest.at("hdf5:///etc/passwd#/x", params)));
        assertEquals(StoreException.Kind.FORBIDDEN, outside.kind());
        assertTrue(datasets.jobs().stream().noneMatch("bad"::equals), datasets.jobs().toString());
        assertEquals(heap, datasets.heapReserved());
    }

    /** Every rank's samples file against the rows its partition names, in order. */
    private static void assertRanks(String job, MountParams params, List<ArrayFiles.Array> parts) throws Exception {
        List<byte[]> rows = new ArrayList<>();
        for (ArrayFiles.Array a : parts) {
            for (int i = 0; i < a.rows(); i++) {
                rows.add(java.util.Arrays.copyOfRange(a.bytes(), i * a.rowBytes(), (i + 1) * a.rowBytes()));
            }
        }
        assertTrue(datasets.awaitLoaded(job, Duration.ofSeconds(30)));
        DataPartition p = new DataPartition(rows.size(), params);
        for (int r = 0; r < params.dpSize(); r++) {
            ByteArrayOutputStream want = new ByteArrayOutputStream();
            for (int id : p.rankSamples(r)) {
                want.write(rows.get(id));
            }
            ViewNode f = datasets.view(job, "dataset/rank-" + r + "/samples");
            byte[] got = datasets.readAsync(f, 0, (int) f.size()).get();
            assertArrayEquals(want.toByteArray(), got, job + " rank " + r);
        }
    }
}
