package io.tenplex.server;

/**
 * The common tar header read without commons-compress: a regular file ({@code '0'}) of the POSIX
 * ustar format ({@code "ustar\0"}, version {@code "00"}) with an empty prefix, a name of printable
 * ASCII that does not end in {@code /}, and numeric fields of octal digits ended by NULs or spaces. This is
 * what the Python client and most tar writers produce for short names; for those records the name
 * and size equal what {@link org.apache.commons.compress.archivers.tar.TarArchiveEntry} reads
 * (TarStreamTest compares them). Anything else answers null and goes to commons-compress.
 */
final class PlainUstar {
    static final int NAME = 0;
    static final int NAME_LEN = 100;
    static final int SIZE = 124;
    static final int SIZE_LEN = 12;
    static final int TYPE = 156;
    static final int MAGIC = 257;
    static final int PREFIX = 345;
    static final int PREFIX_LEN = 155;

    /** A plain file's name and size. */
    record File(String name, long size) {
    }

    private PlainUstar() {
    }

    /** The file this record describes, or null when it is not of the plain form above. */
    static File read(byte[] h) {
        if (h[TYPE] != '0' || !magic(h) || h[PREFIX] != 0) {
            return null;
        }
        int end = NAME;
        while (end < NAME + NAME_LEN && h[end] != 0) {
            if (h[end] < 0x20 || h[end] > 0x7e) {
                return null;
            }
            end++;
        }
        if (end == NAME || h[end - 1] == '/') {
            return null;
        }
        long size = octal(h);
        if (size < 0) {
            return null;
        }
        return new File(new String(h, 0, NAME, end - NAME), size);
    }

    private static boolean magic(byte[] h) {
        return h[MAGIC] == 'u' && h[MAGIC + 1] == 's' && h[MAGIC + 2] == 't' && h[MAGIC + 3] == 'a'
                && h[MAGIC + 4] == 'r' && h[MAGIC + 5] == 0 && h[MAGIC + 6] == '0' && h[MAGIC + 7] == '0';
    }

    /** The numeric fields commons-compress parses besides the size: mode, uid, gid, mtime, device numbers. */
    private static final int[][] NUMBERS = {{100, 8}, {108, 8}, {116, 8}, {136, 12}, {329, 8}, {337, 8}};

    /** The size, when it and every other numeric field are in a plain form; else -1. */
    private static long octal(byte[] h) {
        for (int[] f : NUMBERS) {
            if (plainOctal(h, f[0], f[1]) < 0) {
                return -1;
            }
        }
        return plainOctal(h, SIZE, SIZE_LEN);
    }

    /**
     * A field of octal digits followed only by NULs and spaces (at least one), or one that starts
     * with a NUL (zero): values commons-compress reads the same way; -1 for any other form (leading
     * spaces, base-256, stray bytes), left to it.
     */
    private static long plainOctal(byte[] h, int off, int len) {
        if (h[off] == 0) {
            return 0;
        }
        long v = 0;
        int i = off;
        for (; i < off + len && h[i] >= '0' && h[i] <= '7'; i++) {
            v = (v << 3) | (h[i] - '0');
        }
        if (i == off || i == off + len) {
            return -1;
        }
        for (; i < off + len; i++) {
            if (h[i] != 0 && h[i] != ' ') {
                return -1;
            }
        }
        return v;
    }
}
