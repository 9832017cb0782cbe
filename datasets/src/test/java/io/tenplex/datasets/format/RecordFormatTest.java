package io.tenplex.datasets.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RecordFormatTest {
    @Test
    void recordsOfAnOddSize_tileTheSource() throws Exception {
        Samples s = Sources.find(new RecordFormat(7), new byte[49]);
        assertEquals(7, s.count());
        assertArrayEquals(new long[] {0, 7, 14, 21, 28, 35, 42}, s.begins());
        assertEquals(49, s.ends()[6]);
        assertEquals(0, Sources.find(new RecordFormat(7), new byte[0]).count());
    }

    @Test
    void aTruncatedSource_isRefused_namingItsSizeAndTheRecordSize() {
        String m = Sources.refusal(new RecordFormat(7), new byte[48], 48);
        assertTrue(m.contains("src.bin has 48 bytes, not a multiple of the record size 7"), m);
    }

    @Test
    void theRecordSize_isAPositiveNumber() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RecordFormat.of("0")).getMessage()
                .contains("record size 0 (expected: >= 1)"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RecordFormat.of(null)).getMessage()
                .contains("records needs a size"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RecordFormat.of("x")).getMessage()
                .contains("records needs a size"));
    }
}
