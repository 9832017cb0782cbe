package io.tenplex.datasets.hdf5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Filter bombs ({@code tests/python/make_filter_bombs.py}): a deflated chunk of 1 MiB rows that
 * inflates to 1 GiB, and an LZ4 chunk whose header claims 1 GiB, are refused having decoded no more
 * than the dataset's chunk size (the tests run with a 1 GiB heap: unbounded decoders fail them with
 * an {@link OutOfMemoryError}); a chunk index that claims a chunk is stored in more bytes than any
 * encoder writes for it is refused before the chunk is copied; a well-formed LZ4 chunk still reads
 * bit for bit.
 */
class FilterBombsTest {
    private static final Path SCRIPT = Path.of(System.getProperty("user.dir")).getParent()
            .resolve("tests/python/make_filter_bombs.py");

    @TempDir
    static Path dir;
    static Hdf5Sources sources;

    @BeforeAll
    static void make() throws Exception {
        Process p = new ProcessBuilder("/usr/bin/python3", SCRIPT.toString(), dir.toString()).redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "making the HDF5 files failed (needs python3-h5py, python3-lz4): " + out);
        sources = new Hdf5Sources(Path::of);
    }

    @AfterAll
    static void close() {
        sources.close();
    }

    @Test
    void deflateBomb_inTheFirstChunk_isRefusedAtTheMount_namingTheLimit() throws Exception {
        assertTrue(Files.size(dir.resolve("deflate.h5")) < 6_000_000);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url("deflate.h5",
                "/first")));
        assertTrue(e.getMessage().contains("dataset /first of " + dir.resolve("deflate.h5") + ": rows 0..1024: a deflate "
                + "chunk decodes to 1048641 bytes or more, over the 1048640"), e.getMessage());
    }

    @Test
    void deflateBomb_beyondTheFirstBlock_failsThatBlockOnly_andTheOthersRead() throws Exception {
        String later = url("deflate.h5", "/later");
        assertEquals(3L << 20, sources.check(later));
        UndecodableException e = assertThrows(UndecodableException.class,
                () -> sources.read(later, 1500L * 1024, ByteBuffer.allocate(1024)));
        assertTrue(e.getMessage().contains("rows 1024..2048: a deflate chunk decodes to"), e.getMessage());
        assertThrows(UndecodableException.class, () -> sources.block(later, 1024L * 1024)); // the same again
        byte[] want = Files.readAllBytes(dir.resolve("later.bin"));
        for (long row : new long[] {0, 1023, 2048, 3071}) {
            ByteBuffer b = ByteBuffer.allocate(1024);
            sources.read(later, row * 1024, b);
            assertArrayEquals(Arrays.copyOfRange(want, (int) row * 1024, (int) row * 1024 + 1024), b.array(), "row " + row);
        }
    }

    @Test
    void lz4HeaderClaimingAGibibyte_isRefusedAtTheMount() throws Exception {
        assertTrue(Files.size(dir.resolve("lz4.h5")) < 16 << 10);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url("lz4.h5",
                "/bomb")));
        assertTrue(e.getMessage().contains("rows 0..16: a lz4 chunk decodes to 1073741824 bytes or more, over the 320"),
                e.getMessage());
    }

    @Test
    void wellFormedLz4Chunks_compressedAndRawBlocks_readBitForBit() throws Exception {
        String sound = url("lz4.h5", "/sound");
        assertEquals(256, sources.check(sound));
        ByteBuffer all = ByteBuffer.allocate(256);
        sources.read(sound, 0, all);
        assertArrayEquals(Files.readAllBytes(dir.resolve("sound.bin")), all.array());
    }

    @Test
    void aChunkRecordClaimingMoreStoredBytesThanAChunkTakes_isRefusedBeforeTheChunkIsRead() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url("stored.h5",
                "/claims")));
        assertTrue(e.getMessage().contains("rows 0..1024: chunk [0, 0] is stored in 4195608 bytes, over the 1376256 a "
                + "chunk of 1048576 bytes may take"), e.getMessage());
    }

    private static String url(String file, String dataset) {
        return "hdf5://" + dir.resolve(file) + "#" + dataset;
    }
}
