package io.tenplex.jobs.tiers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class Gf256Test {
    @Property
    void field_laws(@ForAll @IntRange(min = 0, max = 255) int a, @ForAll @IntRange(min = 0, max = 255) int b,
            @ForAll @IntRange(min = 0, max = 255) int c) {
        assertEquals(Gf256.mul(a, b), Gf256.mul(b, a));
        assertEquals(Gf256.mul(a, Gf256.mul(b, c)), Gf256.mul(Gf256.mul(a, b), c));
        assertEquals(Gf256.mul(a, b ^ c), Gf256.mul(a, b) ^ Gf256.mul(a, c));
        assertEquals(a, Gf256.mul(a, 1));
        if (a != 0) {
            assertEquals(1, Gf256.mul(a, Gf256.inv(a)));
        }
    }

    @Property
    void invert_ofACauchySubmatrix_isItsInverse(@ForAll @IntRange(min = 1, max = 8) int n,
            @ForAll @IntRange(min = 0, max = 100) int shift) {
        int k = n + shift;
        int[][] a = new int[n][n];
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < n; i++) {
                a[j][i] = Gf256.cauchy(j, (i + shift) % k, k); // distinct columns of a wider group
            }
        }
        int[][] inv = Gf256.invert(a);
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < n; c++) {
                int sum = 0;
                for (int x = 0; x < n; x++) {
                    sum ^= Gf256.mul(a[r][x], inv[x][c]);
                }
                assertEquals(r == c ? 1 : 0, sum, "row " + r + " col " + c);
            }
        }
    }

    /**
     * One parity block of a group of {@code k} data blocks (any lengths, not powers of two): any one
     * lost block is the parity minus the others, divided by its coefficient.
     */
    @Property
    void oneParity_rebuildsAnyOneLostBlock(@ForAll @Size(min = 1, max = 6) java.util.List<@Size(max = 300) byte[]> blocks,
            @ForAll @IntRange(min = 0, max = 5) int lostAt) {
        int k = blocks.size();
        int lost = lostAt % k;
        int len = blocks.stream().mapToInt(b -> b.length).max().orElse(0);
        ByteBuffer parity = ByteBuffer.allocate(len);
        for (int i = 0; i < k; i++) {
            Gf256.mulAdd(parity, ByteBuffer.wrap(blocks.get(i)), Gf256.cauchy(0, i, k));
        }
        ByteBuffer rebuilt = ByteBuffer.allocate(len).put(parity.array()).clear();
        for (int i = 0; i < k; i++) {
            if (i != lost) {
                Gf256.mulAdd(rebuilt, ByteBuffer.wrap(blocks.get(i)), Gf256.cauchy(0, i, k));
            }
        }
        Gf256.scale(rebuilt, Gf256.inv(Gf256.cauchy(0, lost, k)));
        byte[] want = java.util.Arrays.copyOf(blocks.get(lost), len); // shorter blocks are zero-padded
        assertArrayEquals(want, rebuilt.array());
    }
}
