package io.tenplex.datasets.hdf5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.data.DatasetIndex;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** HDF5 datasets and NetCDF-4 variables read row by row, bit for bit as h5py and netCDF4 read them. */
class Hdf5SourcesTest {
    @TempDir
    static Path dir;
    static List<ArrayFiles.Array> arrays;
    static Hdf5Sources sources;

    @BeforeAll
    static void make() throws Exception {
        arrays = ArrayFiles.make(dir);
        sources = new Hdf5Sources(Path::of);
    }

    @AfterAll
    static void close() {
        sources.close();
    }

    @Test
    void everyArray_rowsInRandomOrder_matchTheLibraries() throws Exception {
        Random rnd = new Random(1);
        for (ArrayFiles.Array a : arrays) {
            AtomicLong heap = new AtomicLong();
            DatasetIndex.File f = sources.index(a.url(), heap::set);
            assertEquals(a.rows(), f.samples(), a.id());
            assertTrue(heap.get() >= 16L * a.rows(), a.id());
            int[] order = rnd.ints(0, a.rows()).limit(3L * a.rows()).toArray();
            for (int i : order) {
                ByteBuffer row = ByteBuffer.allocate(a.rowBytes());
                sources.read(f.url(), f.begins()[i], row);
                assertArrayEquals(Arrays.copyOfRange(a.bytes(), i * a.rowBytes(), (i + 1) * a.rowBytes()), row.array(),
                        a.id() + " row " + i);
            }
        }
    }

    @Test
    void aRangeAcrossBlocks_isReadInOnePiece() throws Exception {
        ArrayFiles.Array a = arrays.stream().filter(x -> x.id().equals("h5_gzip_f64")).findFirst().orElseThrow();
        ByteBuffer all = ByteBuffer.allocate(a.bytes().length - 13);
        sources.read(a.url(), 13, all);
        assertArrayEquals(Arrays.copyOfRange(a.bytes(), 13, a.bytes().length), all.array());
        assertThrows(java.io.IOException.class, () -> sources.read(a.url(), 14, ByteBuffer.allocate(a.bytes().length)));
    }

    @Test
    void rowsReadInOrder_decodeEachChunkOnce() throws Exception {
        ArrayFiles.Array a = arrays.stream().filter(x -> x.id().equals("h5_gzip_f64")).findFirst().orElseThrow();
        try (Hdf5Sources s = new Hdf5Sources(Path::of)) {
            DatasetIndex.File f = s.index(a.url(), x -> { });
            for (int i = 0; i < a.rows(); i++) {
                s.read(f.url(), f.begins()[i], ByteBuffer.allocate(a.rowBytes()));
            }
            assertEquals((a.rows() + 7) / 8, s.blocksDecoded()); // chunks of 8 rows, the first by the check
        }
    }

    /** A block decoded from an array dropped meanwhile (its file changed on disk) is served, not cached. */
    @Test
    void aBlockOfADroppedArray_isNotCached() throws Exception {
        ArrayFiles.Array a = arrays.stream().filter(x -> x.id().equals("h5_gzip_f64")).findFirst().orElseThrow();
        ArrayUrl u = ArrayUrl.parse(a.url());
        try (io.jhdf.HdfFile file = new io.jhdf.HdfFile(Path.of(u.file()))) {
            BlockCache cache = new BlockCache(1 << 20);
            Hdf5Array kept = Hdf5Array.open(u, file, java.nio.file.Files.size(Path.of(u.file())), cache);
            byte[] block = cache.get(kept, 0);
            assertTrue(cache.bytes() > 0, "a block of a live array is cached");
            Hdf5Array dropped = Hdf5Array.open(u, file, java.nio.file.Files.size(Path.of(u.file())), cache);
            cache.drop(dropped);
            long before = cache.bytes();
            assertArrayEquals(block, cache.get(dropped, 0), "its bytes are served");
            assertEquals(before, cache.bytes(), "and not kept");
        }
    }

    @Test
    void canonicalUrls_andTheShortForm() {
        ArrayUrl u = ArrayUrl.parse("netcdf:/data/x.nc#grp/pix");
        assertEquals("/grp/pix", u.dataset());
        assertEquals("netcdf:///data/x.nc#grp/pix", u.toString());
        assertEquals("hdf5:///d/a.h5#/x", ArrayUrl.parse("hdf5:///d/a.h5#x").toString());
        for (String bad : List.of("hdf5:///d/a.h5", "hdf5:rel/a.h5#/x", "zarr:///a#/x", "hdf5:///a.h5#/", "hdf5:///a#b#c")) {
            assertThrows(IllegalArgumentException.class, () -> ArrayUrl.parse(bad), bad);
        }
    }

    @Test
    void badFiles_andNames_areRefusedWithWhy() {
        String h5 = dir.resolve("arrays.h5").toString();
        assertRefused("hdf5://" + h5 + "#/nope", "does not exist");
        assertRefused("hdf5://" + h5 + "#/grp", "not a dataset");
        assertRefused("hdf5://" + dir.resolve("bad/truncated.h5") + "#/contig_f32", "truncated");
        assertRefused("hdf5://" + dir.resolve("bad/notes.h5") + "#/x", "not an HDF5 file");
        assertRefused("netcdf://" + dir.resolve("bad/classic.nc") + "#v", "NetCDF classic");
        assertRefused("hdf5://" + dir.resolve("bad/scaleoffset.h5") + "#/x", "cannot be decoded");
    }

    private static void assertRefused(String url, String why) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url), url);
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }
}
