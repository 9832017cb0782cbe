package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.Test;

/**
 * The plain-header reader against commons-compress (the oracle): on headers as writers make them and
 * on every single-byte change of them, whatever it reads as a plain file is what commons-compress
 * reads, and the forms it does not handle are left to commons-compress.
 */
class PlainUstarTest {

    @Test
    void writtenHeadersAndTheirOneByteMutations_readAsCommonsCompressReadsThem() {
        Random r = new Random(7);
        int plain = 0;
        for (int round = 0; round < 200; round++) {
            byte[] h = header(randomName(r), r.nextInt(4) == 0 ? (1L << 33) - 1 : r.nextInt(100_000));
            assertNotNull(PlainUstar.read(h), "a header commons-compress writes is plain");
            plain += agrees(h) ? 1 : 0;
            for (int k = 0; k < 20; k++) {
                byte[] m = h.clone();
                int at = r.nextInt(4) == 0 ? PlainUstar.SIZE + r.nextInt(PlainUstar.SIZE_LEN) : r.nextInt(512);
                m[at] = (byte) r.nextInt(256);
                withChecksum(m); // as the stream reader sees it: records with a wrong checksum are refused first
                plain += agrees(m) ? 1 : 0;
            }
        }
        assertTrue(plain > 1000, "most records were read on the plain path: " + plain);
    }

    @Test
    void formsLeftToCommonsCompress() {
        byte[] h = header("dir/", 0);
        assertNull(PlainUstar.read(h), "a name ending in / is a directory");
        byte[] old = header("a", 5);
        old[PlainUstar.TYPE] = 0;
        assertNull(PlainUstar.read(old), "the old regular-file type");
        byte[] spaces = header("a", 5);
        spaces[PlainUstar.SIZE] = ' ';
        assertNull(PlainUstar.read(spaces), "a size with leading spaces");
        byte[] prefixed = header("a", 5);
        prefixed[PlainUstar.PREFIX] = 'p';
        assertNull(PlainUstar.read(prefixed), "a ustar prefix");
        byte[] utf8 = header("é", 5);
        assertNull(PlainUstar.read(utf8), "a name that is not ASCII");
        assertEquals(new PlainUstar.File("t0001.meta", 17), PlainUstar.read(header("t0001.meta", 17)));
    }

    /** Whether {@code h} was read on the plain path; when it was, it must equal the oracle's reading. */
    private static boolean agrees(byte[] h) {
        PlainUstar.File f = PlainUstar.read(h);
        if (f == null) {
            return false;
        }
        TarArchiveEntry e;
        try {
            e = new TarArchiveEntry(h);
        } catch (RuntimeException refused) {
            throw new AssertionError("read as plain, refused by commons-compress: " + Arrays.toString(h), refused);
        }
        assertEquals(e.getName(), f.name(), Arrays.toString(h));
        assertEquals(e.getSize(), f.size(), e.getName());
        assertTrue(e.isFile() && !e.isDirectory() && !e.isSymbolicLink() && !e.isLink(), e.getName());
        return true;
    }

    private static String randomName(Random r) {
        String chars = "abcXYZ019._-+ ~/";
        StringBuilder b = new StringBuilder();
        int n = 1 + r.nextInt(99);
        for (int i = 0; i < n; i++) {
            b.append(chars.charAt(r.nextInt(chars.length())));
        }
        if (b.charAt(b.length() - 1) == '/') {
            b.setCharAt(b.length() - 1, 'f');
        }
        return b.toString();
    }

    private static void withChecksum(byte[] h) {
        Arrays.fill(h, 148, 156, (byte) ' ');
        long sum = 0;
        for (byte b : h) {
            sum += b & 0xff;
        }
        byte[] field = String.format("%06o\0 ", sum).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        System.arraycopy(field, 0, h, 148, 8);
    }

    private static byte[] header(String name, long size) {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(size);
        byte[] h = new byte[512];
        e.writeEntryHeader(h);
        return h;
    }
}
