package io.tenplex.datasets.adios2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The coverage check of a step's blocks: exact covers pass, gaps and overlaps do not, and its work is bounded. */
class Adios2BlocksTest {
    private static Adios2Variable.Block block(long r0, long rows, long c0, long cols) {
        return new Adios2Variable.Block(0, 0, new long[] {r0, c0}, new long[] {rows, cols});
    }

    @Test
    void anExactCover_passes_gapsAndOverlaps_doNot() {
        long[] shape = {10, 6};
        assertNull(Blocks.coverage(List.of(block(0, 4, 0, 6), block(4, 6, 0, 3), block(4, 6, 3, 3)), shape));
        assertTrue(Blocks.coverage(List.of(block(0, 4, 0, 6), block(4, 6, 0, 3)), shape).contains("unwritten"));
        assertTrue(Blocks.coverage(List.of(block(0, 5, 0, 6), block(4, 6, 0, 3), block(4, 6, 3, 3), block(9, 1, 0, 0)),
                shape).contains("overlap"));
    }

    @Test
    void columnBlocksSharingTheirRows_areComparedWithinABudget() {
        int n = Blocks.MAX_STEP_BLOCKS; // 2^16 blocks of one column each: 2^31 pairs share rows
        List<Adios2Variable.Block> step = new ArrayList<>();
        for (int c = 0; c < n; c++) {
            step.add(block(0, 1, c, 1));
        }
        long t = System.nanoTime();
        String wrong = Blocks.coverage(step, new long[] {1, n});
        assertTrue(wrong.contains("too much to be checked"), wrong);
        assertTrue(System.nanoTime() - t < 10_000_000_000L, "took " + (System.nanoTime() - t) / 1_000_000 + " ms");
        List<Adios2Variable.Block> few = step.subList(0, 4096); // 2^23 pairs: checked
        assertNull(Blocks.coverage(few, new long[] {1, 4096}));
        long[] pairs = {Blocks.MAX_PAIRS};
        assertNull(Blocks.coverage(few, new long[] {1, 4096}, pairs));
        assertEquals(Blocks.MAX_PAIRS - 4096L * 4095 / 2, pairs[0]);
    }
}
