package io.tenplex.store.memory;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C (Castagnoli) helpers: checksums of buffers, and combination of the checksums of two adjacent
 * byte sequences without reading them again (zlib's {@code crc32_combine} method over GF(2), for the
 * reflected Castagnoli polynomial {@code 0x82F63B78}).
 */
public final class Crc32c {
    private static final int POLY = 0x82F63B78;

    private Crc32c() {
    }

    /** The CRC32C of {@code buf}'s remaining bytes; does not move its position. */
    public static int of(ByteBuffer buf) {
        CRC32C c = new CRC32C();
        c.update(buf.duplicate());
        return (int) c.getValue();
    }

    /** The CRC32C of {@code A || B} from {@code crcA}, {@code crcB} and the length of B. */
    public static int combine(int crcA, int crcB, long lenB) {
        return lenB <= 0 ? crcA : apply(zeros(lenB), crcA) ^ crcB;
    }

    /**
     * The linear operator that appends {@code len} zero bytes to a message's CRC register; with it,
     * {@code combine(a, b, len) == apply(zeros(len), a) ^ b}, and one operator serves many combines.
     */
    public static int[] zeros(long len) {
        int[] odd = new int[32];
        odd[0] = POLY; // operator for one zero bit
        int row = 1;
        for (int n = 1; n < 32; n++) {
            odd[n] = row;
            row <<= 1;
        }
        int[] even = new int[32];
        square(even, odd); // two zero bits
        square(odd, even); // four zero bits
        int[] result = null;
        long left = len;
        while (left != 0) {
            square(even, odd); // 8, 32, 128... bits
            if ((left & 1) != 0) {
                result = result == null ? even.clone() : compose(even, result);
            }
            left >>>= 1;
            if (left == 0) {
                break;
            }
            square(odd, even); // 16, 64... bits
            if ((left & 1) != 0) {
                result = result == null ? odd.clone() : compose(odd, result);
            }
            left >>>= 1;
        }
        return result;
    }

    /** Applies an operator from {@link #zeros(long)} to a CRC. */
    public static int apply(int[] op, int crc) {
        return times(op, crc);
    }

    private static int[] compose(int[] a, int[] b) {
        int[] out = new int[32];
        for (int n = 0; n < 32; n++) {
            out[n] = times(a, b[n]);
        }
        return out;
    }

    private static int times(int[] mat, int vec) {
        int sum = 0;
        int i = 0;
        while (vec != 0) {
            if ((vec & 1) != 0) {
                sum ^= mat[i];
            }
            vec >>>= 1;
            i++;
        }
        return sum;
    }

    private static void square(int[] square, int[] mat) {
        for (int n = 0; n < 32; n++) {
            square[n] = times(mat, mat[n]);
        }
    }

    /** The 8-digit lower-case hex form used in headers. */
    public static String hex(int crc) {
        return String.format("%08x", crc);
    }
}
