package io.tenplex.datasets.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LineFormatTest {
    @Test
    void linesOfOddLengths_includeTheirNewline_andALastLineWithoutOne() throws Exception {
        Samples s = Sources.find(new LineFormat(), Sources.ascii("abc\n\nd\nefghi"));
        assertArrayEquals(new long[] {0, 4, 5, 7}, s.begins());
        assertArrayEquals(new long[] {4, 5, 7, 12}, s.ends());
        assertEquals(0, Sources.find(new LineFormat(), new byte[0]).count());
    }

    @Test
    void linesAcrossReadBuffers_areFound() throws Exception {
        byte[] big = Sources.ascii("x".repeat(70_000) + "\n" + "y".repeat(3) + "\n");
        Samples s = Sources.find(new LineFormat(), big);
        assertArrayEquals(new long[] {0, 70_001}, s.begins());
        assertArrayEquals(new long[] {70_001, 70_005}, s.ends());
    }

    @Test
    void aSourceShorterThanItsSize_isRefused() {
        String m = Sources.refusal(new LineFormat(), Sources.ascii("ab\ncd\n"), 10);
        assertTrue(m.contains("src.bin ends at byte 6, before its size 10"), m);
    }
}
