package io.tenplex.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A tensor's shape and dtype must account for its bytes exactly, with no product that overflows. */
class TensorTest {
    @Test
    void shapeWhoseProductOverflows_isRefused_notTakenForAnEmptyTensor() {
        long g = 1L << 30;
        for (long[] shape : new long[][] {{g, g, g, g, 16}, {g, g, g, g, 0}, {1L << 62, 4}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tensor("u8", shape,
                    new byte[0]));
            assertTrue(e.getMessage().contains("has more than 2^63 bytes"), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Tensor("f64",
                new long[] {1L << 61}, new byte[0]));
        assertTrue(e.getMessage().contains("f64[2305843009213693952] has more than 2^63 bytes"), e.getMessage());
        assertEquals(0, new Tensor("f32", new long[] {0, g, g}, new byte[0]).elements());
        assertEquals(6, new Tensor("u16", new long[] {2, 3}, new byte[12]).elements());
    }
}
