package io.tenplex.datasets.rehearsal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class TuplesTest {
    /** A batch body of one sample of class {@code cls} with a part of {@code dtype}, {@code dims}, {@code nbytes}. */
    static byte[] body(int count, int cls, String dtype, long[] dims, long nbytes, int actual) {
        byte[] d = dtype.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.allocate(64 + d.length + 8 * dims.length + actual).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(count).putInt(cls).putInt(1).putInt(d.length).put(d).putInt(dims.length);
        for (long x : dims) {
            b.putLong(x);
        }
        b.putLong(nbytes).put(new byte[actual]);
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    @Test
    void encodeDecode_roundTripsEveryByte() {
        List<Sample> s = List.of(Tuples.bytesSample(2, new byte[] {1, 2, 3}), Tuples.bytesSample(0, new byte[0]));
        List<Sample> back = Tuples.decode(Tuples.encode(s), 10, 1 << 10);
        assertEquals(2, back.size());
        for (int i = 0; i < 2; i++) {
            assertEquals(s.get(i).cls(), back.get(i).cls());
            assertArrayEquals(s.get(i).tuple(), back.get(i).tuple());
        }
        assertEquals(1, Tuples.decode(body(1, 0, "<f4", new long[] {2, 3}, 24, 24), 1, 100).size());
    }

    @Test
    void decode_sizesFromTheWireAreCheckedBeforeAllocation() {
        assertTrue(msg(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f}).contains("batch of 2147483647 samples"));
        assertTrue(msg(body(2, 0, "<f4", new long[] {2}, 8, 8)).contains("batch of 2 samples"), "over maxSamples");
        assertTrue(msg(body(1, 0, "<f4", new long[] {2}, 8, 4)).contains("part 0 of 8 bytes"), "cut short");
        assertTrue(msg(body(1, 0, "<f4", new long[] {3}, 8, 8)).contains("8 bytes for 3 elements of <f4"));
        assertTrue(msg(body(1, 0, "<f8", new long[] {64}, 512, 512)).contains("limit 256 per sample"));
        assertTrue(msg(body(1, 0, "<f4", new long[] {-1}, 0, 0)).contains("dim 0 is -1"));
        assertTrue(msg(body(1, 0, "x".repeat(40), new long[] {1}, 1, 1)).contains("dtype of 40 bytes"));
        byte[] one = body(1, 0, "|u1", new long[] {1}, 1, 1);
        byte[] trailing = java.util.Arrays.copyOf(one, one.length + 4);
        assertTrue(msg(trailing).contains("bytes after the last"));
        assertTrue(msg(new byte[] {1, 0}).contains("cut short"));
    }

    @Test
    void decode_shapeWhoseProductOverflows_isRefused_evenWithAZeroDimensionOrNoBytes() {
        long g = 1L << 30;
        assertTrue(msg(body(1, 0, "|u1", new long[] {g, g, g, g, 16}, 0, 0)).contains("shape [1073741824, 1073741824, "
                + "1073741824, 1073741824, 16] of 1-byte items has more than 2^63 bytes"));
        assertTrue(msg(body(1, 0, "|u1", new long[] {g, g, g, g, 0}, 0, 0)).contains("more than 2^63 bytes"));
        assertTrue(msg(body(1, 0, "<c16", new long[] {g, g, 1L << 4}, 0, 0)).contains("of 16-byte items"));
        assertEquals(1, Tuples.decode(body(1, 0, "<f8", new long[] {g, 0, 1L << 20}, 0, 0), 1, 256).size(),
                "an empty part (numpy's rule: the non-zero dimensions and the item size stay under 2^63)");
    }

    private static String msg(byte[] body) {
        return assertThrows(IllegalArgumentException.class, () -> Tuples.decode(body, 1, 256)).getMessage();
    }

    @Test
    void itemSize_readsNumpyDtypeStrings() {
        assertEquals(4, Tuples.itemSize("<f4"));
        assertEquals(1, Tuples.itemSize("|b1"));
        assertEquals(16, Tuples.itemSize("<c16"));
        assertEquals(7, Tuples.itemSize("|S7"));
        assertEquals(12, Tuples.itemSize("<U3"));
        // what no rank's numpy could read is refused, not stored to break every later draw
        for (String bad : new String[] {"|O", "<z4", "<f0", "<f99999999999", "<f3", "f4", "<V8", "<f4\u00e9", "|S0"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tuples.itemSize(bad));
            assertTrue(e.getMessage().contains("is not a fixed-size numpy dtype"), e.getMessage());
        }
    }
}
