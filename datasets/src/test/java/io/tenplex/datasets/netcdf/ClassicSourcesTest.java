package io.tenplex.datasets.netcdf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Variables of CDF-1, CDF-2 and CDF-5 files written by netCDF4 (fixed-size and record variables,
 * odd row counts, every numeric type, fill values, a lone record variable of bytes) read back bit
 * for bit as netCDF4 reads them, by row and by ranges across rows.
 */
class ClassicSourcesTest {
    @TempDir
    static Path dir;
    static List<ClassicFiles.Variable> vars;
    static ClassicSources sources;

    @BeforeAll
    static void make() throws Exception {
        vars = ClassicFiles.make(dir);
        sources = new ClassicSources(Path::of);
    }

    @AfterAll
    static void close() {
        sources.close();
    }

    @Test
    void everyVariableOfEveryFormat_readsAsNetcdf4ReadsIt() throws Exception {
        Set<String> kinds = new HashSet<>();
        for (ClassicFiles.Variable v : vars) {
            assertTrue(sources.claims(v.url()), v.id());
            assertEquals((long) v.rows() * v.rowBytes(), sources.check(v.url()), v.id());
            ByteBuffer all = ByteBuffer.allocate(v.bytes().length);
            sources.read(v.url(), 0, all);
            assertArrayEquals(v.bytes(), all.array(), v.id());
            kinds.add(v.id().substring(0, 4) + (v.record() ? " record" : " fixed") + " " + v.dtype());
        }
        for (String t : List.of(">f4", ">i2", "|i1", ">f8")) {
            for (String f : List.of("cdf1", "cdf2", "cdf5")) {
                assertTrue(kinds.contains(f + " fixed " + t) && kinds.contains(f + " record " + t), f + " " + t + ": " + kinds);
            }
        }
        for (String t : List.of(">u8", ">i8", "|u1", ">u2", ">u4")) {
            assertTrue(kinds.contains("cdf5 fixed " + t), t + ": " + kinds);
        }
        for (String t : List.of(">u2", ">u4", ">i8", ">u8")) {
            assertTrue(kinds.contains("cdf5 record " + t), t + ": " + kinds);
        }
    }

    @Test
    void rangesAcrossInterleavedRecords_gatherEachVariablesPart() throws Exception {
        Random r = new Random(3);
        for (ClassicFiles.Variable v : vars) {
            for (int k = 0; k < 20; k++) {
                int from = r.nextInt(v.bytes().length);
                int len = r.nextInt(v.bytes().length - from + 1);
                ByteBuffer b = ByteBuffer.allocate(len + 3).position(2).limit(2 + len);
                sources.read(v.url(), from, b);
                assertEquals(2 + len, b.position());
                assertArrayEquals(Arrays.copyOfRange(v.bytes(), from, from + len), Arrays.copyOfRange(b.array(), 2, 2 + len),
                        v.id() + " " + from + "+" + len);
            }
        }
    }

    @Test
    void fillValues_readAsStored() throws Exception {
        ClassicFiles.Variable fill = find("cdf2_fix_fill"); // rows 20.. never written: -99, big-endian
        assertArrayEquals(new byte[] {-1, -1, -1, -99}, Arrays.copyOfRange(fill.bytes(), 20 * 12, 20 * 12 + 4));
        ByteBuffer row = ByteBuffer.allocate(12);
        sources.read(fill.url(), 30 * 12, row);
        assertEquals(-99, row.getInt(0));
        ClassicFiles.Variable rec = find("cdf1_rec_fill"); // records 9.. never written: -1.5
        ByteBuffer last = ByteBuffer.allocate(40);
        sources.read(rec.url(), 22 * 40, last);
        assertEquals(-1.5, last.getDouble(32));
    }

    @Test
    void index_givesOneRangePerRow_underTheCanonicalUrl() {
        ClassicFiles.Variable v = find("cdf5_rec_i2");
        String loose = v.url().replace("netcdf://", "netcdf:");
        DatasetIndex.File f = sources.index(loose, heap -> { });
        assertEquals(v.url(), f.url());
        assertEquals(v.rows(), f.samples());
        assertEquals(5L * v.rowBytes(), f.begins()[5]);
        assertEquals(6L * v.rowBytes(), f.ends()[5]);
    }

    @Test
    void missingVariable_namesWhatTheFileHas_andHdf5FilesAreNotClaimed() throws Exception {
        String file = dir.resolve("cdf1.nc").toString();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> sources.check("netcdf://" + file + "#nope"));
        assertTrue(e.getMessage().contains("has no variable 'nope'; it has fix_f4, fix_i2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> sources.check("netcdf://" + file + "#grp/fix_f4"));
        Path h5 = dir.resolve("not-classic.nc");
        Files.write(h5, new byte[] {(byte) 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'});
        assertFalse(sources.claims("netcdf://" + h5 + "#x"));
        assertFalse(sources.claims("hdf5://" + file + "#/x"));
    }

    @Test
    void readsBeyondTheVariable_failWithoutReadingTheFile() {
        ClassicFiles.Variable v = find("cdf1_rec_i1");
        assertThrows(IOException.class, () -> sources.read(v.url(), v.bytes().length - 1, ByteBuffer.allocate(2)));
        assertThrows(IOException.class, () -> sources.read(v.url(), -1, ByteBuffer.allocate(1)));
    }

    private static ClassicFiles.Variable find(String id) {
        return vars.stream().filter(v -> v.id().equals(id)).findFirst().orElseThrow();
    }
}
