package io.tenplex.datasets.adios2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * BP4 and BP5 directories that try to make the daemon allocate, read or serve what it must not: no
 * {@code md.idx}, truncated metadata at every cut, truncated data, counts and offsets that overflow or
 * lie beyond the files, unknown types and records, blocks that leave gaps or overlap. Each is refused
 * with an {@link IllegalArgumentException} (a 400) naming the directory and what is wrong, and leaves
 * no file open (checked in {@code /proc/self/fd}).
 */
class HostileAdios2FilesTest {
    @TempDir
    Path dir;
    private final Adios2Sources sources = new Adios2Sources(Path::of);

    @AfterEach
    void nothingLeftOpen() throws IOException {
        int open = sources.openFiles();
        sources.close();
        assertEquals(0, open);
        assertEquals(List.of(), Adios2Files.openUnder(dir));
    }

    @Test
    void aDirectoryWithoutMdIdx_orAPlainFile_isRefused() throws IOException {
        Path empty = Files.createDirectories(dir.resolve("empty.bp"));
        assertRefused(empty, "i8", "ADIOS2 file " + empty + " has no md.idx");
        Path plain = Files.writeString(dir.resolve("plain.bp"), "ADIOS-BP");
        assertRefused(plain, "i8", "ADIOS2 file " + plain + " is not a directory");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void truncatedMetadata_isRefusedAtEveryCut(String engine) throws IOException {
        for (String f : engine.equals("bp5") ? List.of("md.idx", "md.0", "mmd.0") : List.of("md.idx", "md.0")) {
            int length = (int) Files.size(Adios2Files.file(engine).resolve(f));
            for (int cut : new int[] {0, 7, 37, 40, 63, 64, 65, 100, 200, length - 8, length - 1}) {
                if (cut < length) {
                    Path p = copy(engine, "cut" + cut + f, f, b -> Arrays.copyOf(b, cut));
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> sources.check(Adios2Files.url(p, "f64")), f + " cut at " + cut);
                    assertTrue(e.getMessage().startsWith("ADIOS2 file " + p + ": " + f + ": ")
                            || cut == 64 && f.equals("md.idx") // a header and no steps: no variables yet
                            && e.getMessage().equals(p + " (ADIOS2 " + engine.toUpperCase() + ") has no variable 'f64'; "
                            + "it has none")
                            || f.equals("mmd.0") && e.getMessage().endsWith(", which mmd.0 does not have"), e.getMessage());
                    assertEquals(List.of(), Adios2Files.openUnder(dir));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void truncatedData_isRefused_namingTheSubfile(String engine) throws IOException {
        Path p = copy(engine, "short", "data.0", b -> Arrays.copyOf(b, b.length / 2));
        assertRefused(p, "f64", "data.0, beyond its ");
        Path gone = copy(engine, "nodata", "data.0", b -> b);
        Files.delete(gone.resolve("data.0"));
        assertRefused(gone, "f64", "ADIOS2 file " + gone + ": data.0 is missing or not readable");
    }

    @Test
    void anUnknownVersionOrRecord_isRefused() throws IOException {
        Path v3 = copy("bp5", "v3", "md.idx", b -> set(b, 37, 3));
        assertRefused(v3, "i8", "ADIOS2 file " + v3 + ": md.idx: the BP version is 3");
        Path rec = copy("bp5", "rec", "md.idx", b -> set(b, 64, 'x'));
        assertRefused(rec, "i8", "md.idx: unknown record id 120 at byte 64");
        Path fortran = copy("bp5", "fortran", "md.idx", b -> set(b, 40, 'y'));
        assertRefused(fortran, "i8", "md.idx: the column-major flag");
    }

    @Test
    void unknownTypes_areRefused() throws IOException {
        Path bp5 = copy("bp5", "type5", "mmd.0", b -> replace(b, "BPG_1_1_i8\0", "BPG_1_77_8\0"));
        assertRefused(bp5, "i8", "md.0: the metadata of writer 0 in step 0: variable '8' has an unknown type code 77");
        Path bp4 = copy("bp4", "type4", "md.0", b -> replace(b, "\2\0i8K\0\0", "\2\0i8K\0\u0063"));
        assertRefused(bp4, "i8", "md.0: variable 'i8' has an unknown type code 99");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void countsAndOffsetsBeyondTheShapeOrFile_orOverflowing_areRefused(String engine) throws IOException {
        // the block of [7,3] variable i8 in step 0: its count of the first dimension (BP5: Shape, Count and
        // Offset follow each other; BP4: count, shape and start of each dimension)
        boolean five = engine.equals("bp5");
        long[] was = five ? new long[] {7, 3, 7, 3, 0, 0} : new long[] {7, 7, 0};
        for (long bad : new long[] {8, Long.MAX_VALUE, -1}) {
            long[] now = was.clone();
            now[five ? 2 : 0] = bad;
            Path p = copy(engine, "count" + bad, "md.0", b -> replaceLongs(b, was, now, "i8"));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> sources.check(Adios2Files.url(p, "i8")));
            assertTrue(e.getMessage().startsWith("ADIOS2 file " + p + ": md.0: "), e.getMessage());
            assertTrue(e.getMessage().matches(".*(outside the shape|is \\d+ \\(at most|over 2\\^63).*"), e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void blocksThatLeaveGapsOrOverlap_areRefused(String engine) throws IOException {
        // variable blocks: [10,6] as rows 0..3 x cols 0..5, rows 4..9 x cols 0..2, rows 4..9 x cols 3..5
        boolean five = engine.equals("bp5");
        long[] counts = five ? new long[] {4, 6, 6, 3, 6, 3} : new long[] {4, 10, 0, 6, 6, 0};
        long[] fewer = five ? new long[] {3, 6, 6, 3, 6, 3} : new long[] {3, 10, 0, 6, 6, 0};
        Path gap = copy(engine, "gap", "md.0", b -> replaceLongs(b, counts, fewer, "blocks"));
        assertRefused(gap, "blocks", "is refused: its blocks leave 6 elements of the shape [10, 6] unwritten");
        long[] starts = five ? new long[] {0, 0, 4, 0, 4, 3} : new long[] {6, 10, 4, 3, 6, 0};
        long[] moved = five ? new long[] {0, 0, 3, 0, 4, 3} : new long[] {6, 10, 3, 3, 6, 0};
        Path overlap = copy(engine, "overlap", "md.0", b -> replaceLongs(b, starts, moved, "blocks"));
        assertRefused(overlap, "blocks", "is refused: blocks overlap");
    }

    @Test
    void bp4NegativeStartsOrShapes_areRefused_notServedShiftedOrWithGaps() throws IOException {
        // the first block of variable blocks in step 0 ([4,6] at [0,0] of [10,6]) moved to start at row -1:
        // its volume still sums to the shape's, row 3 would be left unwritten and rows 0..2 shifted
        long[] first = {4, 10, 0, 6, 6, 0};
        long[] before = {4, 10, -1, 6, 6, 0};
        Path start = copy("bp4", "negstart", "md.0", b -> replaceLongs(b, first, before, "blocks"));
        assertRefused(start, "blocks", "its start of dimension 0 is 18446744073709551615 (over 2^63)");
        // every [7,3] block as [1,1] at [-2,-2] of a shape [-1,-1]: one element whose rows count -3
        Path shape = copy("bp4", "negshape", "md.0",
                b -> replaceAll(b, longs(new long[] {7, 7, 0, 3, 3, 0}), longs(new long[] {1, -1, -2, 1, -1, -2})));
        assertRefused(shape, "i8", "its shape of dimension 0 is 18446744073709551615 (over 2^63)");
    }

    @Test
    void ffsFieldNamesThatOverlap_areRefused() throws IOException {
        // the first format of mmd.0 (16 bytes of lengths, the 12-byte ID, the 8-byte representation header,
        // then its top struct): field 1 named by field 0's name. Overlapping names let a small format name
        // 2^16 fields with one long string each, every copy kept: gigabytes from a megabyte.
        Path p = copy("bp5", "names", "mmd.0", b -> {
            int struct = 16 + 12 + 8;
            int fields = struct + (b[struct + 17] & 0xFF);
            System.arraycopy(b, fields, b, fields + 16, 4);
            return b;
        });
        assertRefused(p, "i8", "overlaps another name or type");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bp4", "bp5"})
    void stepsWhoseMetadataOverlap_areRefused(String engine) throws IOException {
        // md.idx with its last record repeated: every repeat would parse the same metadata again, so a
        // 256 MiB md.idx of records naming one large step would keep the daemon parsing for hours
        Path p = copy(engine, "again", "md.idx", b -> {
            int last = 64;
            for (int at = 64; at < b.length; at += engine.equals("bp4") ? 64 : 9 + (int) longs(b, at + 1)) {
                last = at;
            }
            byte[] out = Arrays.copyOf(b, b.length + b.length - last);
            System.arraycopy(b, last, out, b.length, b.length - last);
            return out;
        });
        assertRefused(p, "i8", engine.equals("bp4") ? "the steps' metadata overlap" : "md.idx names them twice");
    }

    private static long longs(byte[] b, int at) {
        return ByteBuffer.wrap(b, at, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private static byte[] replaceAll(byte[] b, byte[] from, byte[] to) {
        for (int at = indexOf(b, from, 0); at >= 0; at = indexOf(b, from, at + to.length)) {
            System.arraycopy(to, 0, b, at, to.length);
        }
        return b;
    }

    private void assertRefused(Path p, String var, String part) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> sources.check(Adios2Files.url(p, var)));
        assertTrue(e.getMessage().contains(p.toString()) && e.getMessage().contains(part), e.getMessage());
    }

    /** A copy of {@code engine}'s directory as {@code name}.bp with its file {@code f} changed. */
    private Path copy(String engine, String name, String f, UnaryOperator<byte[]> change) throws IOException {
        Path to = Files.createDirectories(dir.resolve(engine + "-" + name + ".bp"));
        try (Stream<Path> files = Files.list(Adios2Files.file(engine))) {
            for (Path p : files.toList()) {
                byte[] b = Files.readAllBytes(p);
                Files.write(to.resolve(p.getFileName()), p.getFileName().toString().equals(f) ? change.apply(b) : b);
            }
        }
        return to;
    }

    private static byte[] set(byte[] b, int at, int v) {
        b[at] = (byte) v;
        return b;
    }

    private static byte[] replace(byte[] b, String from, String to) {
        byte[] f = from.getBytes(StandardCharsets.ISO_8859_1);
        return replaceBytes(b, f, to.getBytes(StandardCharsets.ISO_8859_1), 0);
    }

    /** Replaces the first run of 8-byte numbers {@code from} after the name {@code after} (in md.0 of BP4) or anywhere. */
    private static byte[] replaceLongs(byte[] b, long[] from, long[] to, String after) {
        int start = indexOf(b, ("\0" + after + "K").getBytes(StandardCharsets.ISO_8859_1), 0);
        return replaceBytes(b, longs(from), longs(to), Math.max(start, 0));
    }

    private static byte[] longs(long[] v) {
        ByteBuffer x = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        Arrays.stream(v).forEach(x::putLong);
        return x.array();
    }

    private static byte[] replaceBytes(byte[] b, byte[] from, byte[] to, int start) {
        int at = indexOf(b, from, start);
        assertTrue(at >= 0, "pattern not found");
        System.arraycopy(to, 0, b, at, to.length);
        return b;
    }

    private static int indexOf(byte[] b, byte[] f, int start) {
        for (int i = start; i <= b.length - f.length; i++) {
            if (Arrays.equals(b, i, i + f.length, f, 0, f.length)) {
                return i;
            }
        }
        return -1;
    }
}
