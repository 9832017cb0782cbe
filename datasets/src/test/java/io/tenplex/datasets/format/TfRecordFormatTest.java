package io.tenplex.datasets.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TfRecordFormatTest {
    /** Records of 1, 0 and 5 data bytes: 17, 16 and 21 bytes with their framing. */
    private static byte[] records() {
        ByteBuffer b = ByteBuffer.allocate(100).order(ByteOrder.LITTLE_ENDIAN);
        for (String rec : new String[] {"a", "", "odd!!"}) {
            b.putLong(rec.length()).putInt(0).put(Sources.ascii(rec)).putInt(0);
        }
        return Arrays.copyOf(b.array(), b.position());
    }

    @Test
    void recordsOfOddSizes_includeTheirFraming() throws Exception {
        Samples s = Sources.find(new TfRecordFormat(), records());
        assertArrayEquals(new long[] {0, 17, 33}, s.begins());
        assertArrayEquals(new long[] {17, 33, 54}, s.ends());
    }

    @Test
    void aSourceCutInAHeader_isRefused_namingTheByte() {
        byte[] cut = Arrays.copyOf(records(), 40);
        String m = Sources.refusal(new TfRecordFormat(), cut, cut.length);
        assertTrue(m.contains("src.bin: truncated TFRecord header at byte 33"), m);
    }

    @Test
    void aSourceCutInTheData_isRefused_namingTheRecordAndItsLength() {
        byte[] cut = Arrays.copyOf(records(), 50);
        String m = Sources.refusal(new TfRecordFormat(), cut, cut.length);
        assertTrue(m.contains("TFRecord at byte 33 claims 5 bytes, past the end of the file (50)"), m);
    }

    @Test
    void aNegativeOrHugeLength_isRefused() {
        byte[] bad = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(Long.MAX_VALUE).array();
        assertTrue(Sources.refusal(new TfRecordFormat(), bad, bad.length).contains("past the end of the file"));
    }
}
