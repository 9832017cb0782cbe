package io.tenplex.datasets.netcdf;

import static io.tenplex.datasets.netcdf.CdfBytes.NC_BYTE;
import static io.tenplex.datasets.netcdf.CdfBytes.NC_DOUBLE;
import static io.tenplex.datasets.netcdf.CdfBytes.NC_INT;
import static io.tenplex.datasets.netcdf.CdfBytes.NC_UINT64;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Classic files that try to make the daemon allocate, read or serve what it must not: truncated
 * headers and data, counts and sizes that overflow or exceed the file, dimension ids out of range,
 * misplaced record dimensions, variables too large for their format. Each is refused with an
 * {@link IllegalArgumentException} (a 400) naming the file and the field, and leaves no file open.
 */
class HostileClassicFilesTest {
    @TempDir
    static Path dir;
    static List<ClassicFiles.Variable> good;
    static ClassicSources sources;

    @BeforeAll
    static void make() throws Exception {
        Files.createDirectories(dir.resolve("good"));
        good = ClassicFiles.make(dir.resolve("good"));
        sources = new ClassicSources(Path::of);
    }

    @AfterAll
    static void close() {
        sources.close();
    }

    @AfterEach
    void nothingLeftOpen() {
        int open = sources.openFiles();
        sources.close(); // the files of the variables a test served
        assertEquals(0, open);
    }

    @Test
    void truncatedHeaders_areRefusedAtEveryCut() throws Exception {
        for (String f : List.of("cdf1.nc", "cdf2.nc", "cdf5.nc")) {
            byte[] whole = Files.readAllBytes(dir.resolve("good/" + f));
            for (int cut : new int[] {3, 4, 7, 8, 15, 40, 100, 333, 587}) {
                Path p = dir.resolve("cut-" + cut + "-" + f);
                Files.write(p, Arrays.copyOf(whole, cut));
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url(p, "fix_f4")));
                assertTrue(e.getMessage().matches("NetCDF classic file " + p + ": (truncated header: .* needs bytes .*"
                        + "|.* bytes left in the file hold at most .*)"), e.getMessage());
                assertEquals(0, sources.openFiles());
            }
        }
    }

    @Test
    void truncatedData_refusesTheVariablesItCut_andServesThoseBeforeIt() throws Exception {
        byte[] whole = Files.readAllBytes(dir.resolve("good/cdf2.nc"));
        Path p = dir.resolve("short.nc");
        Files.write(p, Arrays.copyOf(whole, whole.length - 1));
        assertRefused(url(p, "rec_fill"), "variable rec_fill of " + p + " lies at bytes ");
        assertRefused(url(p, "rec_fill"), "truncated?");
        String fixed = url(p, "fix_f4");
        ByteBuffer all = ByteBuffer.allocate(37 * 60);
        sources.read(fixed, 0, all);
        assertArrayEquals(good.stream().filter(v -> v.id().equals("cdf2_fix_f4")).findFirst().orElseThrow().bytes(),
                all.array());
        assertEquals(1, sources.openFiles());
        sources.close();
    }

    @Test
    void signatureAndTags_areChecked() throws Exception {
        assertRefused(header("v3.nc", new CdfBytes(3, 0).absent().absent().absent(), 0), "version byte 3");
        assertRefused(header("tag.nc", new CdfBytes(1, 0).int32(0x0B).int32(1), 0), "list has tag 11");
        assertRefused(header("absent.nc", new CdfBytes(1, 0).int32(0).int32(2), 0), "list has tag 0");
        assertRefused(header("negrecs.nc", new CdfBytes(2, -5).absent().absent().absent(), 0), "numrecs is -5");
    }

    @Test
    void countsBeyondTheFileOrTheLimits_areRefusedBeforeAllocating() throws Exception {
        assertRefused(header("dims.nc", new CdfBytes(1, 0).int32(0x0A).int32(Integer.MAX_VALUE), 0), "2147483647 dimensions");
        assertRefused(header("dims5.nc", new CdfBytes(5, 0).int32(0x0A).int64(1L << 62), 0), "4611686018427387904 dimensions");
        assertRefused(header("dimsfile.nc", new CdfBytes(2, 0).int32(0x0A).int32(1000), 200), "hold at most");
        assertRefused(header("vars.nc", new CdfBytes(2, 0).absent().absent().vars(60000), 4096), "60000 variables");
        assertRefused(header("name.nc", new CdfBytes(1, 0).int32(0x0A).int32(1).int32(1 << 20), 64),
                "the name of dimension 0 has 1048576 bytes");
        assertRefused(header("utf8.nc", new CdfBytes(1, 0).int32(0x0A).int32(1).int32(2).raw(0xC3, 0x28, 0, 0).int32(1), 64),
                "is not UTF-8");
        CdfBytes many = new CdfBytes(1, 0).dims(1).absent().vars(40000); // 40000 variables of 1000 dimensions: 320 MB of shapes
        for (int i = 0; i < 5000; i++) {
            many.name("v" + i).int32(1000).raw(new byte[4000]).absent().int32(NC_INT).int32(0).int32(0);
        }
        assertRefused(header("many.nc", many, 0), "the names and shapes of variables 0..4");
        CdfBytes ndims = new CdfBytes(1, 0).dims(3).absent().vars(1).name("v").int32(1 << 24);
        assertRefused(header("ndims.nc", ndims, 256), "has 16777216 dimensions (limit 1024");
    }

    @Test
    void sizesThatOverflow_areRefused() throws Exception {
        CdfBytes attr = new CdfBytes(5, 0).absent().int32(0x0C).int64(1).name("a").int32(NC_DOUBLE).int64(1L << 62);
        assertRefused(header("attr.nc", attr, 0), "global attribute a has 4611686018427387904 elements of 8 bytes: the size overflows");
        CdfBytes attr1 = new CdfBytes(1, 0).absent().int32(0x0C).int32(1).name("a").int32(NC_DOUBLE).int32(Integer.MAX_VALUE);
        assertRefused(header("attr1.nc", attr1, 0), "truncated header: the values of global attribute a");
        CdfBytes shape = new CdfBytes(5, 0).dims(1L << 40, 1L << 40, 1L << 40).absent().vars(1)
                .var("v", NC_DOUBLE, 4096, 0, 1, 2);
        assertRefused(header("shape.nc", shape, 0), "variable 'v' has the shape [1099511627776, 1099511627776, "
                + "1099511627776] of 8-byte elements: the size overflows");
        CdfBytes recs = new CdfBytes(5, 0).dims(0, 1L << 59).absent().vars(2)
                .var("a", NC_DOUBLE, 4096, 0, 1).var("b", NC_DOUBLE, 4096, 0, 1);
        assertRefused(header("recsum.nc", recs, 0), "record variables' sizes overflow");
        CdfBytes far = new CdfBytes(5, 1000).dims(0, 1L << 58).absent().vars(2)
                .var("a", NC_INT, 4096, 0).var("b", NC_DOUBLE, 8192, 0, 1);
        assertRefused(url(header("far.nc", far, 16384), "a"), "variable a of " + dir.resolve("far.nc") + " lies at bytes 4096..(overflow)");
    }

    @Test
    void dimensionIdsAndRecordDimensions_areChecked() throws Exception {
        assertRefused(header("dimid.nc", new CdfBytes(1, 0).dims(5).absent().vars(1).var("v", NC_INT, 200, 3), 400),
                "names dimension id 3 (the file has 1 dimensions)");
        assertRefused(header("dimid5.nc", new CdfBytes(5, 0).dims(5).absent().vars(1).var("v", NC_INT, 200, -1L), 400),
                "dimension id 0 of variable 'v' is -1");
        assertRefused(header("recpos.nc", new CdfBytes(1, 2).dims(4, 0).absent().vars(1).var("v", NC_INT, 200, 0, 1), 400),
                "record (unlimited) dimension at position 1");
        assertRefused(header("tworec.nc", new CdfBytes(1, 2).dims(0, 0), 400), "dimension 1 is a second record");
        assertRefused(header("dup.nc", new CdfBytes(1, 0).dims(4).absent().vars(2).var("v", NC_INT, 200, 0)
                .var("v", NC_INT, 216, 0), 400), "two variables are named 'v'");
    }

    @Test
    void offsetsOutsideTheData_areRefused() throws Exception {
        assertRefused(header("negbegin.nc", new CdfBytes(1, 0).dims(4).absent().vars(1).var("v", NC_INT, 0x80000000L, 0), 400),
                "variable 'v' begins at offset -2147483648");
        assertRefused(header("beyond.nc", new CdfBytes(2, 0).dims(4).absent().vars(1).var("v", NC_INT, 1L << 40, 0), 400),
                "lies at bytes 1099511627776..1099511627792, outside the data of the file");
        assertRefused(header("inhead.nc", new CdfBytes(2, 0).dims(4).absent().vars(1).var("v", NC_INT, 8, 0), 400),
                "lies at bytes 8..24, outside the data of the file (bytes 84..400");
        assertRefused(header("end.nc", new CdfBytes(2, 0).dims(4).absent().vars(1).var("v", NC_INT, 390, 0), 400),
                "lies at bytes 390..406");
    }

    @Test
    void variablesTooLargeForTheirFormat_areRefused_unlessLast() throws Exception {
        CdfBytes big = new CdfBytes(2, 0).dims(1 << 30, 4).absent().vars(2).var("big", NC_DOUBLE, 4096, 0)
                .var("small", NC_INT, 4096, 1);
        assertRefused(header("big2.nc", big, 8192), "variable 'big' has 8589934592 bytes: too large for CDF-2");
        CdfBytes last = new CdfBytes(2, 0).dims(1 << 30, 4).absent().vars(2).var("small", NC_INT, 4096, 1)
                .var("big", NC_DOUBLE, 4096, 0);
        assertEquals(16, sources.check(url(header("big2last.nc", last, 8192), "small")));
        assertRefused(url(dir.resolve("big2last.nc"), "big"), "outside the data of the file");
        CdfBytes big5 = new CdfBytes(5, 0).dims(1 << 30, 4).absent().vars(2).var("big", NC_DOUBLE, 8192, 0)
                .var("small", NC_INT, 4096, 1);
        assertEquals(16, sources.check(url(header("big5.nc", big5, 8192), "small")));
        assertRefused(header("type.nc", new CdfBytes(1, 0).dims(4).absent().vars(1).var("v", NC_UINT64, 200, 0), 400),
                "type code 11, not a type of CDF-1");
        sources.close();
    }

    @Test
    void rowsOverTheLimits_andScalars_areRefused() throws Exception {
        assertRefused(header("rows.nc", new CdfBytes(5, 0).dims(1L << 32).absent().vars(1).var("v", NC_BYTE, 200, 0), 400),
                "has 4294967296 rows (limit 2147483639)");
        assertRefused(header("row.nc", new CdfBytes(5, 0).dims(2, 1 << 25).absent().vars(1).var("v", NC_BYTE, 200, 0, 1), 400),
                "has rows of 33554432 bytes (limit 16777216)");
        assertRefused(header("recs.nc", new CdfBytes(5, 1L << 40).dims(0).absent().vars(1).var("v", NC_BYTE, 200, 0), 400),
                "has 1099511627776 rows");
        assertRefused(header("scalar.nc", new CdfBytes(1, 0).absent().absent().vars(1).var("v", NC_INT, 200), 400),
                "is a scalar, not rows");
    }

    @Test
    void streamingNumrecs_countsTheWholeRecordsTheFileHolds() throws Exception {
        CdfBytes h = new CdfBytes(1, 0xFFFFFFFFL).dims(0, 3).absent().vars(1);
        int begin = h.size() + 8 + 4 + 2 * 4 + 8 + 4 + 4 + 4; // the variable entry, then its data
        h.var("r", NC_INT, begin, 0, 1);
        assertEquals(begin, h.size());
        for (int i = 0; i < 3 * 3 + 1; i++) { // three records of 12 bytes and a part of a fourth
            h.int32(1000 + i);
        }
        Path p = header("stream.nc", h, 0);
        String u = url(p, "r");
        assertEquals(36, sources.check(u));
        ByteBuffer rows = ByteBuffer.allocate(36);
        sources.read(u, 0, rows);
        assertEquals(1000, rows.getInt(0));
        assertEquals(1008, rows.getInt(32));
        sources.close();
    }

    private static Path header(String name, CdfBytes h, int total) throws Exception {
        return h.write(dir.resolve(name), total);
    }

    private static String url(Path p, String variable) {
        return "netcdf://" + p + "#" + variable;
    }

    private static void assertRefused(Path p, String why) {
        assertRefused(url(p, "v"), why);
    }

    private static void assertRefused(String url, String why) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url), url);
        assertTrue(e.getMessage().contains(why), e.getMessage());
        assertTrue(e.getMessage().contains(url.substring("netcdf://".length(), url.indexOf('#'))), e.getMessage());
    }
}
