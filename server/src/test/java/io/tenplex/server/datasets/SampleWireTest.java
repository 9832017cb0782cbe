package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SampleWireTest {
    private static ByteBuffer bytes(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void idsAndSamples_roundTrip_withMissingAndEmptySamples() {
        assertArrayEquals(new int[] {7, -1, 1 << 30}, SampleWire.ids(SampleWire.request(new int[] {7, -1, 1 << 30})));
        List<ByteBuffer> got = SampleWire.samples(SampleWire.answer(Arrays.asList(bytes("abc"), null, bytes(""))), 3);
        assertEquals(bytes("abc"), got.get(0));
        assertNull(got.get(1));
        assertEquals(0, got.get(2).remaining());
    }

    @Test
    void aCutAnswer_givesNoneForTheRest_andIdsMustBeWholeInts() {
        byte[] whole = SampleWire.answer(List.of(bytes("abc"), bytes("defg")));
        List<ByteBuffer> got = SampleWire.samples(Arrays.copyOf(whole, whole.length - 1), 3);
        assertEquals(bytes("abc"), got.get(0));
        assertNull(got.get(1));
        assertNull(got.get(2));
        assertThrows(IllegalArgumentException.class, () -> SampleWire.ids(new byte[5]));
    }
}
