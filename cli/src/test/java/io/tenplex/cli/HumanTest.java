package io.tenplex.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Sizes and durations as people read them, and the progress bar on and off a terminal. */
class HumanTest {
    @Test
    void bytes_inBinaryUnits_threeDigits() {
        assertEquals("0 B", Human.bytes(0));
        assertEquals("839 B", Human.bytes(839));
        assertEquals("16.0 KiB", Human.bytes(16 * 1024));
        assertEquals("1.00 MiB", Human.bytes(1 << 20));
        assertEquals("11.8 GiB", Human.bytes(1.2638255104E10));
        assertEquals("256 MiB", Human.bytes(256L << 20));
        assertEquals("-2.00 KiB", Human.bytes(-2048));
    }

    @Test
    void durations_fromMilliseconds() {
        assertEquals("0.35 ms", Human.millis(0.35));
        assertEquals("25.7 ms", Human.millis(25.749888));
        assertEquals("340 ms", Human.millis(340));
        assertEquals("1.50 s", Human.millis(1500));
        assertEquals("42.0 s", Human.millis(42_000));
        assertEquals("2 min 5 s", Human.millis(125_000));
        assertEquals("3 h 2 min", Human.millis((3 * 3600 + 125) * 1000.0));
        assertEquals("1,234,567", Human.count(1234567.0));
    }

    @Test
    void statusLine_ofAStoreMetric() {
        assertEquals("store used bytes: 11.8 GiB", TenplexCli.Status.storeLine("tenplex_store_used_bytes 1.2638255104E10"));
        assertEquals("store tensors: 35", TenplexCli.Status.storeLine("tenplex_store_tensors 35.0"));
    }

    @Test
    void bar_zeroOfZero_isEmpty_notFull() {
        assertEquals("[..............................] 0 B / 0 B", Progress.bar(0, 0));
        assertEquals("[###############...............] 8.00 KiB / 16.0 KiB", Progress.bar(8192, 16384));
        assertEquals("[##############################] 16.0 KiB / 16.0 KiB", Progress.bar(16384, 16384));
    }

    @Test
    void progress_offATerminal_printsPlainLines_onChange() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(b, true, StandardCharsets.UTF_8), false);
        p.update(0, 100, "preparing");
        p.update(10, 100, "preparing"); // same state within the quiet period: no line
        p.update(50, 100, "transferring");
        p.update(100, 100, "committed");
        p.finish();
        String out = b.toString(StandardCharsets.UTF_8);
        assertFalse(out.contains("\r"), out);
        assertEquals(3, out.lines().count(), out);
        assertTrue(out.lines().toList().get(2).endsWith("100 B / 100 B committed"), out);
    }

    @Test
    void progress_onATerminal_redrawsInPlace() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(b, true, StandardCharsets.UTF_8), true);
        p.update(0, 100, "preparing");
        p.update(100, 100, "committed");
        p.finish();
        String out = b.toString(StandardCharsets.UTF_8);
        assertEquals(2, out.chars().filter(c -> c == '\r').count(), out);
        assertEquals(1, out.split("\n").length, out);
        assertTrue(out.endsWith("\n"), out);
    }
}
