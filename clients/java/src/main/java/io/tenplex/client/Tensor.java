package io.tenplex.client;

import java.util.Arrays;

/**
 * A tensor as the daemon stores it: dtype short name ({@code f64 f32 f16 bf16 i64 i32 i16 i8 u64 u32
 * u16 u8 bool}), shape (empty for a scalar) and little-endian row-major bytes. Held on the heap, so a
 * tensor read whole is at most 2 GiB; read larger ones in sub-tensor ranges.
 */
public record Tensor(String dtype, long[] shape, byte[] data) {
    public Tensor {
        long n = 1;
        try {
            for (long d : shape) {
                if (d < 0) {
                    throw new IllegalArgumentException("negative dimension in " + Arrays.toString(shape));
                }
                n = Math.multiplyExact(n, d);
            }
            Math.multiplyExact(n, itemSize(dtype));
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(dtype + Arrays.toString(shape) + " has more than 2^63 bytes");
        }
        if (n * itemSize(dtype) != data.length) {
            throw new IllegalArgumentException(dtype + Arrays.toString(shape) + " needs " + n * itemSize(dtype)
                    + " bytes, got " + data.length);
        }
    }

    public static int itemSize(String dtype) {
        return switch (dtype) {
            case "c128" -> 16;
            case "f64", "i64", "u64", "c64" -> 8;
            case "f32", "i32", "u32" -> 4;
            case "f16", "bf16", "i16", "u16" -> 2;
            case "i8", "u8", "bool" -> 1;
            default -> throw new IllegalArgumentException("unknown dtype '" + dtype + "'");
        };
    }

    public static boolean isFloat(String dtype) {
        return dtype.startsWith("f") || dtype.equals("bf16");
    }

    public long elements() {
        return data.length / itemSize(dtype);
    }

    public String describe() {
        return dtype + Arrays.toString(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tensor t && t.dtype.equals(dtype) && Arrays.equals(t.shape, shape) && Arrays.equals(t.data, data);
    }

    @Override
    public int hashCode() {
        return dtype.hashCode() * 31 + Arrays.hashCode(shape) * 17 + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
        return "Tensor" + describe();
    }
}
