package io.tenplex.datasets.rehearsal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RankBufferTest {
    private static final RehearsalConfig CONFIG = new RehearsalConfig(3, 4, 2, 8, 1);

    static Sample sample(int cls, int id) {
        return Tuples.bytesSample(cls, new byte[] {(byte) id, (byte) (id >> 8), (byte) cls});
    }

    @Test
    void offer_appendsUntilAClassIsFull_thenReplacesARandomRepresentativeOfThatClassOnly() {
        RankBuffer b = new RankBuffer(CONFIG, 0);
        List<Sample> first = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            first.add(sample(1, i));
        }
        assertEquals(new RankBuffer.Offered(4, 0, 4L * first.get(0).bytes()), b.offer(first));
        assertArrayEquals(new int[] {0, 4, 0}, b.counts());
        RankBuffer.Offered o = b.offer(List.of(sample(1, 100), sample(2, 7)));
        assertEquals(1, o.appended());
        assertEquals(1, o.replaced());
        assertArrayEquals(new int[] {0, 4, 1}, b.counts(), "a full class memory stays at S; the other grows");
        Set<Integer> ids = new HashSet<>();
        b.all(1).forEach(s -> ids.add(s.tuple()[s.tuple().length - 3] & 0xff));
        assertTrue(ids.contains(100), "the candidate replaced one of the four: " + ids);
        assertEquals(4, ids.size());
    }

    @Test
    void offer_replacementIsUniformOverTheClassMemory() {
        int[] survived = new int[5];
        for (int round = 0; round < 2000; round++) {
            RankBuffer r = new RankBuffer(new RehearsalConfig(1, 5, 1, 1, round), 0);
            for (int i = 0; i < 5; i++) {
                r.offer(List.of(sample(0, i)));
            }
            r.offer(List.of(sample(0, 99)));
            for (int i = 0; i < 5; i++) {
                survived[i] += r.get(0, i).tuple()[r.get(0, i).tuple().length - 3] == 99 ? 1 : 0;
            }
        }
        for (int i = 0; i < 5; i++) {
            assertTrue(survived[i] > 320 && survived[i] < 480, "slot " + i + " replaced " + survived[i] + " of 2000");
        }
    }

    @Test
    void offer_classOutOfRange_insertsNothing() {
        RankBuffer b = new RankBuffer(CONFIG, 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> b.offer(List.of(sample(0, 1), sample(3, 2))));
        assertEquals("class 3 out of range (expected: 0 <= class < 3)", e.getMessage());
        assertArrayEquals(new int[] {0, 0, 0}, b.counts());
        assertEquals(0, b.bytes());
    }

    @Test
    void config_outOfRange_isRefusedWithTheValues() {
        assertEquals("candidates 9 out of range (expected: 0 <= candidates <= 8)", assertThrows(
                IllegalArgumentException.class, () -> new RehearsalConfig(2, 2, 9, 8, 0)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> new RehearsalConfig(1 << 16, 1 << 20, 1, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new RehearsalConfig(0, 2, 1, 1, 0));
        assertEquals(0.25, new RehearsalConfig(2, 2, 2, 8, 0).offerProbability());
    }
}
