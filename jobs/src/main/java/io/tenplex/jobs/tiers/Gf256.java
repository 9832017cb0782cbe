package io.tenplex.jobs.tiers;

import java.nio.ByteBuffer;

/**
 * Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d, generator 2), as
 * Reed-Solomon erasure codes use it: addition is XOR; multiplication by table lookup. Parity block
 * {@code j} of a group is {@code sum_i c(j, i) * data_i} with the Cauchy coefficients
 * {@link #cauchy}, so every square submatrix of the code is invertible and any {@code m} lost
 * blocks of a group can be solved for.
 */
public final class Gf256 {
    private static final int[] EXP = new int[512];
    private static final int[] LOG = new int[256];
    /** MUL[a][b] = a * b. */
    private static final byte[][] MUL = new byte[256][256];

    static {
        int x = 1;
        for (int i = 0; i < 255; i++) {
            EXP[i] = x;
            LOG[x] = i;
            x <<= 1;
            if (x >= 256) {
                x ^= 0x11d;
            }
        }
        for (int i = 255; i < 512; i++) {
            EXP[i] = EXP[i - 255];
        }
        for (int a = 0; a < 256; a++) {
            for (int b = 0; b < 256; b++) {
                MUL[a][b] = (byte) (a == 0 || b == 0 ? 0 : EXP[LOG[a] + LOG[b]]);
            }
        }
    }

    private Gf256() {
    }

    public static int mul(int a, int b) {
        return MUL[a & 0xff][b & 0xff] & 0xff;
    }

    /** The multiplicative inverse of {@code a} (not 0). */
    public static int inv(int a) {
        if ((a & 0xff) == 0) {
            throw new ArithmeticException("0 has no inverse in GF(2^8)");
        }
        return EXP[255 - LOG[a & 0xff]];
    }

    /**
     * The coefficient of data block {@code i} in parity block {@code j} of a group of {@code k}:
     * {@code 1 / (x_j + y_i)} with {@code x_j = k + j}, {@code y_i = i} (distinct, so never 0).
     */
    public static int cauchy(int j, int i, int k) {
        if (k + j > 255 || i >= k) {
            throw new IllegalArgumentException("a group of " + k + " with parity " + j + " is over GF(2^8)'s size");
        }
        return inv((k + j) ^ i);
    }

    /**
     * The inverse of a square matrix over GF(2^8) (Gauss-Jordan); {@code a} is left unchanged.
     *
     * @throws ArithmeticException when it is singular
     */
    public static int[][] invert(int[][] a) {
        int n = a.length;
        int[][] m = new int[n][2 * n];
        for (int r = 0; r < n; r++) {
            System.arraycopy(a[r], 0, m[r], 0, n);
            m[r][n + r] = 1;
        }
        for (int col = 0; col < n; col++) {
            int pivot = col;
            while (pivot < n && m[pivot][col] == 0) {
                pivot++;
            }
            if (pivot == n) {
                throw new ArithmeticException("singular matrix over GF(2^8)");
            }
            int[] t = m[pivot];
            m[pivot] = m[col];
            m[col] = t;
            int scale = inv(m[col][col]);
            for (int c = 0; c < 2 * n; c++) {
                m[col][c] = mul(m[col][c], scale);
            }
            for (int r = 0; r < n; r++) {
                int f = m[r][col];
                if (r != col && f != 0) {
                    for (int c = 0; c < 2 * n; c++) {
                        m[r][c] ^= mul(f, m[col][c]);
                    }
                }
            }
        }
        int[][] out = new int[n][n];
        for (int r = 0; r < n; r++) {
            System.arraycopy(m[r], n, out[r], 0, n);
        }
        return out;
    }

    /** {@code dst[0..n) ^= c * src[0..n)}, n = src.remaining(); positions unchanged. */
    public static void mulAdd(ByteBuffer dst, ByteBuffer src, int c) {
        byte[] row = MUL[c & 0xff];
        int n = src.remaining();
        byte[] in = new byte[Math.min(n, STRIP)];
        byte[] out = new byte[in.length];
        for (int done = 0; done < n; done += in.length) { // bulk copies in strips: no per-byte buffer calls
            int len = Math.min(in.length, n - done);
            src.get(src.position() + done, in, 0, len);
            dst.get(dst.position() + done, out, 0, len);
            for (int i = 0; i < len; i++) {
                out[i] ^= row[in[i] & 0xff];
            }
            dst.put(dst.position() + done, out, 0, len);
        }
    }

    private static final int STRIP = 64 << 10;

    /** {@code buf[0..n) = c * buf[0..n)}, in place; position unchanged. */
    public static void scale(ByteBuffer buf, int c) {
        byte[] row = MUL[c & 0xff];
        int n = buf.remaining();
        byte[] strip = new byte[Math.min(n, STRIP)];
        for (int done = 0; done < n; done += strip.length) {
            int len = Math.min(strip.length, n - done);
            buf.get(buf.position() + done, strip, 0, len);
            for (int i = 0; i < len; i++) {
                strip[i] = row[strip[i] & 0xff];
            }
            buf.put(buf.position() + done, strip, 0, len);
        }
    }
}
