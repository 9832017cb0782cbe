package io.tenplex.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.datasets.DatasetExecutors;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.MountRequest;
import io.tenplex.datasets.ShardPeers;
import io.tenplex.datasets.SourcePolicy;
import io.tenplex.ptc.data.MountParams;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HDF5 datasets and NetCDF-4 and classic (CDF-1, CDF-2, CDF-5) variables, written by h5py and netCDF4, mounted as datasets and read
 * through a real FUSE mount by the Python reader, every sample compared bit for bit with the row
 * the library reads from the file (tests/python/check_array_mount.py), before and after a change
 * of data parallelism.
 */
class ArrayMountIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    @TempDir
    Path tmp;
    private Path data;
    private TensorStore store;
    private DatasetService datasets;
    private TenplexFuse fuse;
    private Path mnt;

    @BeforeEach
    void mount() throws Exception {
        data = tmp.resolve("data");
        assertEquals("", run("tests/python/make_arrays.py", data.toString()));
        store = new TensorStore(new Allocator(64L << 20));
        datasets = new DatasetService(store.allocator(), SourcePolicy.none().withDataRoots(List.of(data)),
                ShardPeers.NONE, DatasetExecutors.standard());
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

    /** Runs a script of tests/python with /usr/bin/python3; its output (it must exit 0). */
    private static String run(String script, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("/usr/bin/python3", ROOT.resolve(script).toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), script + ": " + out);
        return out.trim();
    }

    private String check(String job, int dp, String url, String... reference) throws Exception {
        assertTrue(datasets.awaitLoaded(job, Duration.ofSeconds(30)));
        List<String> args = new java.util.ArrayList<>(List.of(mnt.toString(), job, Integer.toString(dp), url));
        args.addAll(List.of(reference));
        return run("tests/python/check_array_mount.py", args.toArray(String[]::new));
    }

    @Test
    void chunkedCompressedHdf5_readThroughFuse_matchesH5py_acrossAResize() throws Exception {
        String url = "hdf5://" + data.resolve("arrays.h5") + "#/grp/u8"; // 99 rows, shuffle + gzip, chunks of 16
        datasets.mount("h", MountRequest.at(url, new MountParams(0, 10, 2, 3, true, 8)));
        assertEquals("{\"0\": 45, \"1\": 45}", check("h", 2, url));
        datasets.mount("h", MountRequest.at(url, new MountParams(30, 10, 3, 3, true, 8))); // k = 4: 4, 4, 2
        assertEquals("{\"0\": 24, \"1\": 24, \"2\": 12}", check("h", 3, url));
    }

    @Test
    void netcdfClassicVariables_ofEveryFormat_matchNetcdf4_acrossAResize() throws Exception {
        Path classic = data.resolve("classic"); // below the data root
        run("tests/python/make_classic.py", classic.toString());
        // fixed-size (37 rows) and record (23 rows, interleaved; 21, a lone one) variables of several dtypes
        for (String v : List.of("cdf1.nc#fix_f4", "cdf1.nc#rec_i2", "cdf2.nc#fix_fill", "cdf2.nc#rec_fill", "cdf5.nc#fix_u2",
                "cdf5.nc#rec_u8", "cdf5-lone.nc#lone_i1")) {
            String url = "netcdf://" + classic.resolve(v);
            datasets.mount("c", MountRequest.at(url, new MountParams(0, 4, 2, 1, true, 3)));
            String two = check("c", 2, url);
            datasets.mount("c", MountRequest.at(url, new MountParams(12, 6, 3, 1, true, 3)));
            String three = check("c", 3, url);
            int rows = v.contains("#fix_f4") || v.contains("#fix_fill") || v.contains("#fix_u2") ? 37
                    : v.contains("lone") ? 21 : 23;
            int half = rows / 4 * 4 / 2;
            assertEquals("{\"0\": " + half + ", \"1\": " + half + "}", two, v);
            int epoch = rows / 6 * 6; // the rest of the epoch after 12 samples (two batches), over 3 ranks
            assertTrue(three.matches("\\{\"0\": \\d+, \"1\": \\d+, \"2\": \\d+}"), v + ": " + three);
            assertEquals(epoch - 12, java.util.regex.Pattern.compile(": (\\d+)").matcher(three).results()
                    .mapToInt(m -> Integer.parseInt(m.group(1))).sum(), v + ": " + three);
        }
    }

    /**
     * ADIOS2 variables of the BP4 and BP5 files ADIOS2 2.10 wrote, through FUSE at dp 2 and then dp 3,
     * each sample equal to the row ADIOS2's own reader dumped (datasets/src/test/resources/adios2).
     */
    @Test
    void adios2Variables_ofBp4AndBp5_matchAdios2sReader_acrossAResize() throws Exception {
        Path made = ROOT.resolve("datasets/src/test/resources/adios2");
        // variable, numpy dtype, row shape, rows (3 steps of the first dimension)
        List<List<Object>> vars = List.of(List.of("blocks", "<f4", "6", 30),
                List.of("cube", "<f8", "2,4", 9), List.of("vec", "<i4", "", 15), List.of("cplx", "<c8", "2", 6));
        for (String bp : List.of("bp4", "bp5")) {
            Path dir = data.resolve(bp + ".bp");
            Files.createDirectories(dir);
            try (java.util.stream.Stream<Path> files = Files.list(made.resolve(bp + ".bp"))) {
                for (Path f : files.toList()) {
                    Files.copy(f, dir.resolve(f.getFileName().toString()));
                }
            }
            for (List<Object> v : vars) {
                String url = "adios2://" + dir + "#" + v.get(0);
                String dump = made.resolve(bp + ".ref").resolve(v.get(0) + ".bin").toString();
                int rows = (int) v.get(3);
                datasets.mount("a", MountRequest.at(url, new MountParams(0, 2, 2, 1, true, 3)));
                String two = check("a", 2, url, dump, (String) v.get(1), (String) v.get(2));
                assertEquals("{\"0\": " + rows / 2 + ", \"1\": " + rows / 2 + "}", two, url);
                datasets.mount("a", MountRequest.at(url, new MountParams(3, 3, 3, 1, true, 3)));
                String three = check("a", 3, url, dump, (String) v.get(1), (String) v.get(2));
                assertEquals(rows / 3 * 3 - 3, java.util.regex.Pattern.compile(": (\\d+)").matcher(three).results()
                        .mapToInt(m -> Integer.parseInt(m.group(1))).sum(), url + ": " + three);
            }
        }
    }

    @Test
    void contiguousBigEndianHdf5_andNetcdfVariables_matchTheLibraries() throws Exception {
        String be = "hdf5://" + data.resolve("arrays.h5") + "#/be_i16"; // 21 rows, contiguous, >i2
        datasets.mount("b", MountRequest.at(be, new MountParams(0, 4, 2, 1, true, 3)));
        assertEquals("{\"0\": 10, \"1\": 10}", check("b", 2, be));
        for (String v : List.of("temp", "counts", "grp/pix")) { // 29 rows each
            String url = "netcdf://" + data.resolve("vars.nc") + "#" + v;
            datasets.mount("n", MountRequest.at(url, new MountParams(0, 7, 1, 2, true, 5)));
            assertEquals("{\"0\": 28}", check("n", 1, url), v);
        }
    }
}
