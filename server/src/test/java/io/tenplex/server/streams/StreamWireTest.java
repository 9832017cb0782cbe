package io.tenplex.server.streams;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.datasets.streams.Sample;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StreamWireTest {
    @Test
    void movedSamples_roundTrip_withRanksReadsAndIds() {
        Map<Integer, List<Sample>> in = Map.of(2, List.of(new Sample(7, new byte[] {1, 2, 3}, 4),
                new Sample(8, new byte[0], 0)));
        Map<Integer, List<Sample>> out = StreamWire.moved(StreamWire.moved(in));
        assertEquals(2, out.get(2).size());
        assertEquals(7, out.get(2).get(0).id());
        assertEquals(4, out.get(2).get(0).reads());
        assertArrayEquals(new byte[] {1, 2, 3}, out.get(2).get(0).data());
    }

    @Test
    void batch_roundTrips() {
        List<byte[]> s = StreamWire.batchSamples(StreamWire.batch(List.of(new byte[] {9}, new byte[] {8, 7}), true));
        assertArrayEquals(new byte[] {8, 7}, s.get(1));
    }

    @Test
    void lengthsFromTheWire_areCheckedBeforeAllocation() {
        byte[] hugeCount = ByteBuffer.allocate(4).putInt(Integer.MAX_VALUE).array();
        assertThrows(IllegalArgumentException.class, () -> StreamWire.moved(hugeCount));
        byte[] hugeSample = ByteBuffer.allocate(24).putInt(1).putInt(0).putInt(0).putLong(1).putInt(1 << 30).array();
        assertThrows(IllegalArgumentException.class, () -> StreamWire.moved(hugeSample));
        byte[] negative = ByteBuffer.allocate(24).putInt(1).putInt(-1).putInt(0).putLong(1).putInt(0).array();
        assertThrows(IllegalArgumentException.class, () -> StreamWire.moved(negative));
        assertThrows(IllegalArgumentException.class, () -> StreamWire.batchSamples(new byte[3]));
    }
}
