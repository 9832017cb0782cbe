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
 * HDF5 files that try to make the daemon read what it must not, or loop, or serve corrupt rows, made
 * by h5py: external links (to a file that could lie outside the data roots), datasets with external
 * storage, soft-link loops, and chunks whose Fletcher-32 checksum fails.
 */
class HostileFilesTest {
    private static final String MAKE = """
            import sys, h5py, numpy as np
            d = sys.argv[1]
            with h5py.File(d + "/out/secret.h5", "w") as f:
                f.create_dataset("x", data=np.frombuffer(b"TOP-SECRET-ROW", "u1").reshape(1, -1).repeat(4, 0), chunks=(2, 14))
                f["c"] = np.frombuffer(b"TOP-SECRET-ROW", "u1").reshape(1, -1).repeat(4, 0)
            with h5py.File(d + "/links.h5", "w") as f:
                f["x"] = np.arange(16, dtype="<f4").reshape(4, 4)
                f["t"] = h5py.ExternalLink(d + "/out/secret.h5", "/x")
                f["tc"] = h5py.ExternalLink(d + "/out/secret.h5", "/c")
                g = f.create_group("g")
                g["e"] = h5py.ExternalLink(d + "/out/secret.h5", "/")
                g["y"] = np.arange(6, dtype="<i2").reshape(3, 2)
                g["rel"] = h5py.SoftLink("y")
                f["gl"] = h5py.SoftLink("/g")
                f["loop"] = h5py.SoftLink("/loop")
                f["a"] = h5py.SoftLink("/b")
                f["b"] = h5py.SoftLink("/a/x")
                f["pad"] = np.zeros(4096, "u1")
            with h5py.File(d + "/external.h5", "w") as f:
                f["x"] = np.zeros((4, 4), "<f4")
                f.create_dataset("t", shape=(4, 4), dtype="<f4", external=[(d + "/out/raw.bin", 0, 64)])
            open(d + "/out/raw.bin", "wb").write(bytes(64))
            good = np.arange(64 * 4, dtype="<i4").reshape(64, 4) * 7919 % 65521
            odd = (np.arange(40 * 3, dtype="u1") * 37).reshape(40, 3)
            with h5py.File(d + "/fletcher.h5", "w") as f:
                f.create_dataset("plain", data=good, chunks=(8, 4), fletcher32=True)
                f.create_dataset("gzip", data=good, chunks=(8, 2), fletcher32=True, shuffle=True, compression="gzip")
                f.create_dataset("odd", data=odd, chunks=(5, 3), fletcher32=True)
                f.create_dataset("bad0", data=good, chunks=(8, 4), fletcher32=True)
                f.create_dataset("bad3", data=good, chunks=(8, 4), fletcher32=True, compression="gzip")
                at = [(f["bad0"].id.get_chunk_info(0).byte_offset, 2), (f["bad3"].id.get_chunk_info(3).byte_offset, 0)]
            b = bytearray(open(d + "/fletcher.h5", "rb").read())
            for off, k in at:
                b[off + k] ^= 0xFF
            open(d + "/fletcher.h5", "wb").write(b)
            open(d + "/good.bin", "wb").write(good.tobytes())
            open(d + "/odd.bin", "wb").write(odd.tobytes())
            """;

    @TempDir
    static Path dir;
    static Hdf5Sources sources;

    @BeforeAll
    static void make() throws Exception {
        Files.createDirectories(dir.resolve("out"));
        Process p = new ProcessBuilder("/usr/bin/python3", "-c", MAKE, dir.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "making the HDF5 files failed (needs python3-h5py): " + out);
        sources = new Hdf5Sources(Path::of);
    }

    @AfterAll
    static void close() {
        sources.close();
    }

    @Test
    void externalLinks_onTheDatasetPath_areRefused_namingTheLinkAndItsTarget() {
        String secret = dir.resolve("out/secret.h5").toString();
        assertRefused(url("links.h5", "/t"), "/t is an external link to " + secret + ":/x");
        assertRefused(url("links.h5", "/tc"), "/tc is an external link to " + secret + ":/c");
        assertRefused(url("links.h5", "/g/e/x"), "/g/e is an external link to " + secret + ":/");
    }

    @Test
    void externalStorage_isNamed_insteadOfEveryDatasetMissing() {
        assertRefused(url("external.h5", "/t"), "external storage");
        assertRefused(url("external.h5", "/x"), "external storage");
    }

    @Test
    void softLinkLoops_areRefused_andSoftLinksWithinTheFileAreFollowed() throws Exception {
        assertRefused(url("links.h5", "/loop"), "soft links");
        assertRefused(url("links.h5", "/a"), "soft links");
        assertRefused(url("links.h5", "/b/x"), "soft links");
        assertRefused(url("links.h5", "/x/y"), "not a group");
        byte[] y = {0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0};
        for (String path : new String[] {"/g/rel", "/gl/y", "/gl/rel", "/g/./y"}) {
            ByteBuffer all = ByteBuffer.allocate(12);
            sources.read(url("links.h5", path), 0, all);
            assertArrayEquals(y, all.array(), path);
        }
    }

    @Test
    void fletcher32Chunks_asH5pyWritesThem_readBitForBit() throws Exception {
        byte[] good = Files.readAllBytes(dir.resolve("good.bin"));
        byte[] odd = Files.readAllBytes(dir.resolve("odd.bin")); // chunks of 15 bytes: an odd last byte
        for (String[] c : new String[][] {{"/plain", "good"}, {"/gzip", "good"}, {"/odd", "odd"}}) {
            byte[] want = c[1].equals("odd") ? odd : good;
            ByteBuffer all = ByteBuffer.allocate(want.length);
            sources.read(url("fletcher.h5", c[0]), 0, all);
            assertArrayEquals(want, all.array(), c[0]);
        }
    }

    @Test
    void aCorruptFletcher32Chunk_failsTheMountOrTheRead_namingFileDatasetAndChunk() throws Exception {
        String file = dir.resolve("fletcher.h5").toString();
        assertRefused(url("fletcher.h5", "/bad0"), "dataset /bad0 of " + file + ": rows 0..8: chunk [0, 0]: Fletcher-32");
        String bad3 = url("fletcher.h5", "/bad3");
        sources.check(bad3); // the first block is sound
        UndecodableException e = assertThrows(UndecodableException.class,
                () -> sources.read(bad3, 24 * 16, ByteBuffer.allocate(16)));
        assertTrue(e.getMessage().contains("dataset /bad3 of " + file + ": rows 24..32: chunk [24, 0]: Fletcher-32"),
                e.getMessage());
        ByteBuffer row = ByteBuffer.allocate(16); // the chunks around it still read
        sources.read(bad3, 32 * 16, row);
        byte[] good = Files.readAllBytes(dir.resolve("good.bin"));
        assertArrayEquals(Arrays.copyOfRange(good, 32 * 16, 33 * 16), row.array());
    }

    private static String url(String file, String dataset) {
        return "hdf5://" + dir.resolve(file) + "#" + dataset;
    }

    private static void assertRefused(String url, String why) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sources.check(url), url);
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }
}
