package io.tenplex.store.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

class ChecksumsTest {

    @Property(tries = 300)
    void combine_equalsChecksumOfConcatenation(@ForAll @IntRange(max = 5000) int lenA,
            @ForAll @IntRange(max = 5000) int lenB, @ForAll long seed) {
        byte[] all = new byte[lenA + lenB];
        new Random(seed).nextBytes(all);
        int crcA = Crc32c.of(ByteBuffer.wrap(all, 0, lenA));
        int crcB = Crc32c.of(ByteBuffer.wrap(all, lenA, lenB));
        assertEquals(Crc32c.of(ByteBuffer.wrap(all)), Crc32c.combine(crcA, crcB, lenB));
    }

    @Property(tries = 60)
    void blockRanges_matchDirectChecksums(@ForAll @IntRange(min = 1, max = 3000) int size,
            @ForAll @IntRange(min = 100, max = 700) int block, @ForAll long seed) {
        try (Allocator a = new Allocator(size, 128)) {
            byte[] data = new byte[size];
            new Random(seed).nextBytes(data);
            Blob b = a.allocate(size);
            b.write(0, ByteBuffer.wrap(data));
            BlockChecksums computed = BlockChecksums.compute(b, block);
            BlockChecksums.Builder inc = new BlockChecksums.Builder(size, block);
            for (int off = 0; off < size; off += 97) {
                inc.update(ByteBuffer.wrap(data, off, Math.min(97, size - off)));
            }
            BlockChecksums streamed = inc.build();
            int blocks = computed.blockCount();
            for (int i = 0; i < blocks; i++) {
                assertEquals(computed.block(i), streamed.block(i));
            }
            for (int first = 0; first < blocks; first++) {
                for (int last = first; last < blocks; last++) {
                    long off = (long) first * block;
                    long end = Math.min(size, (long) (last + 1) * block);
                    int want = Crc32c.of(ByteBuffer.wrap(data, (int) off, (int) (end - off)));
                    assertEquals(want, computed.range(off, end - off).getAsInt());
                }
            }
            if (block > 1 && size > 1) {
                assertTrue(computed.range(1, size - 1).isEmpty());
            }
            b.release();
        }
    }
}
