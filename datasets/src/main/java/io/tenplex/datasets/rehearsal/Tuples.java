package io.tenplex.datasets.rehearsal;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The binary form of a batch of samples (all integers little-endian): {@code int32 count}, then per
 * sample {@code int32 class}, {@code int32 parts} and per part {@code int32 dtypeLength}, the dtype
 * (ASCII, numpy's {@code dtype.str}, e.g. {@code <f4}), {@code int32 ndim}, {@code ndim x int64} dims,
 * {@code int64 nbytes} and the bytes (C order). Every count and size read is checked against a limit
 * and against the bytes left before anything is allocated; a dtype that ends in its item size (all
 * numpy ones do) must agree with the shape and the byte count.
 */
public final class Tuples {
    public static final int MAX_PARTS = 16;
    public static final int MAX_DTYPE = 32;
    public static final int MAX_NDIM = 16;

    private Tuples() {
    }

    /**
     * The samples of a batch body.
     *
     * @param maxSamples the most samples a body may hold
     * @param maxSampleBytes the most bytes one sample's tuple may take
     * @throws IllegalArgumentException when the body is malformed or over a limit (message with the values)
     */
    public static List<Sample> decode(byte[] body, int maxSamples, int maxSampleBytes) {
        ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        try {
            int count = in.getInt();
            if (count < 0 || count > maxSamples || count > in.remaining() / 12) {
                throw new IllegalArgumentException("batch of " + count + " samples in " + body.length
                        + " bytes (expected: 0 <= count <= " + maxSamples + ", 12 bytes at least per sample)");
            }
            List<Sample> out = new ArrayList<>(count);
            for (int k = 0; k < count; k++) {
                int cls = in.getInt();
                int start = in.position();
                readTuple(in, maxSampleBytes, k);
                byte[] tuple = new byte[in.position() - start];
                in.get(start, tuple);
                out.add(new Sample(cls, tuple));
            }
            if (in.hasRemaining()) {
                throw new IllegalArgumentException(in.remaining() + " bytes after the last of " + count + " samples");
            }
            return out;
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("batch body cut short (" + body.length + " bytes)");
        }
    }

    private static void readTuple(ByteBuffer in, int maxSampleBytes, int k) {
        int start = in.position();
        int parts = in.getInt();
        if (parts < 1 || parts > MAX_PARTS) {
            throw new IllegalArgumentException("sample " + k + " has " + parts + " parts (expected: 1 <= parts <= "
                    + MAX_PARTS + ")");
        }
        for (int p = 0; p < parts; p++) {
            long nbytes = readPartHead(in, k, p);
            if (nbytes > in.remaining() || in.position() - start + nbytes > maxSampleBytes) {
                throw new IllegalArgumentException("sample " + k + " part " + p + " of " + nbytes + " bytes (expected: "
                        + "at most " + Math.min(in.remaining(), maxSampleBytes - (in.position() - start))
                        + " bytes, limit " + maxSampleBytes + " per sample)");
            }
            in.position(in.position() + (int) nbytes);
        }
    }

    /** Reads a part's dtype and shape; answers its byte count, checked against them. */
    private static long readPartHead(ByteBuffer in, int k, int p) {
        int len = in.getInt();
        if (len < 1 || len > MAX_DTYPE || len > in.remaining()) {
            throw new IllegalArgumentException("sample " + k + " part " + p + ": dtype of " + len
                    + " bytes (expected: 1 to " + MAX_DTYPE + ")");
        }
        byte[] d = new byte[len];
        in.get(d);
        String dtype = new String(d, StandardCharsets.US_ASCII);
        int ndim = in.getInt();
        if (ndim < 0 || ndim > MAX_NDIM) {
            throw new IllegalArgumentException("sample " + k + " part " + p + ": ndim " + ndim + " (expected: 0 to "
                    + MAX_NDIM + ")");
        }
        long[] dims = new long[ndim];
        for (int i = 0; i < ndim; i++) {
            dims[i] = in.getLong();
            if (dims[i] < 0 || dims[i] > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("sample " + k + " part " + p + ": dim " + i + " is " + dims[i]);
            }
        }
        long nbytes = in.getLong();
        int item;
        try {
            item = itemSize(dtype);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("sample " + k + " part " + p + ": " + e.getMessage());
        }
        long elements = elements(dims, item, k, p);
        if (nbytes < 0 || nbytes != elements * item) {
            throw new IllegalArgumentException("sample " + k + " part " + p + ": " + nbytes + " bytes for " + elements
                    + " elements of " + dtype);
        }
        return nbytes;
    }

    /**
     * The elements of a part of shape {@code dims}, every product overflow-checked: a shape whose
     * non-zero dimensions multiply (with the item size) past 2^63 is refused even with a zero
     * dimension among them, as no rank could hold or reshape it.
     */
    private static long elements(long[] dims, int item, int k, int p) {
        long nonZero = item;
        boolean empty = false;
        try {
            for (long d : dims) {
                empty |= d == 0;
                nonZero = d == 0 ? nonZero : Math.multiplyExact(nonZero, d);
            }
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("sample " + k + " part " + p + ": shape " + java.util.Arrays.toString(dims)
                    + " of " + item + "-byte items has more than 2^63 bytes");
        }
        return empty ? 0 : nonZero / item;
    }

    /** Numpy's fixed-size dtypes ({@code dtype.str}): numbers, booleans, bytes and unicode strings of n characters. */
    private static final java.util.regex.Pattern DTYPE = java.util.regex.Pattern.compile(
            "[<>|=](?:(b1|i1|i2|i4|i8|u1|u2|u4|u8|f2|f4|f8|c8|c16)|S([1-9][0-9]{0,6})|U([1-9][0-9]{0,5}))");

    /**
     * The item size of a numpy dtype string ({@code <f4}: 4, {@code |S7}: 7, {@code <U3}: 12); anything
     * else (objects, unknown kinds, sizes numpy has no such type of) is refused, since no rank could read it.
     */
    static int itemSize(String dtype) {
        java.util.regex.Matcher m = DTYPE.matcher(dtype);
        if (!m.matches()) {
            throw new IllegalArgumentException("dtype '" + dtype.replaceAll("[^ -~]", "?") + "' is not a fixed-size "
                    + "numpy dtype string (e.g. <f4, |u1, |b1, <i8, |S16, <U8)");
        }
        if (m.group(1) != null) {
            return Integer.parseInt(m.group(1).substring(1));
        }
        return m.group(2) != null ? Integer.parseInt(m.group(2)) : 4 * Integer.parseInt(m.group(3));
    }

    /** The body of a batch of {@code samples}. */
    public static byte[] encode(List<Sample> samples) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer head = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        out.write(head.putInt(0, samples.size()).array(), 0, 4);
        for (Sample s : samples) {
            out.write(head.putInt(0, s.cls()).array(), 0, 4);
            out.write(s.tuple(), 0, s.tuple().length);
        }
        return out.toByteArray();
    }

    /** A one-part tuple of {@code data} as {@code |u1} bytes of shape [length] (tests, benchmarks). */
    public static Sample bytesSample(int cls, byte[] data) {
        byte[] dtype = "|u1".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + dtype.length + 4 + 8 + 8 + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(1).putInt(dtype.length).put(dtype).putInt(1).putLong(data.length).putLong(data.length).put(data);
        return new Sample(cls, b.array());
    }
}
