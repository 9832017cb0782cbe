package io.tenplex.client.nd4j;

import io.tenplex.client.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** Conversions between {@link Tensor} (the daemon's bytes) and ND4J's {@link INDArray}. */
public final class Nd4jTensors {
    private Nd4jTensors() {
    }

    public static DataType dataType(String dtype) {
        return switch (dtype) {
            case "f64" -> DataType.DOUBLE;
            case "f32" -> DataType.FLOAT;
            case "f16" -> DataType.HALF;
            case "bf16" -> DataType.BFLOAT16;
            case "i64" -> DataType.LONG;
            case "i32" -> DataType.INT;
            case "i16" -> DataType.SHORT;
            case "i8" -> DataType.BYTE;
            case "u64" -> DataType.UINT64;
            case "u32" -> DataType.UINT32;
            case "u16" -> DataType.UINT16;
            case "u8" -> DataType.UBYTE;
            case "bool" -> DataType.BOOL;
            default -> throw new IllegalArgumentException("unknown dtype '" + dtype + "'");
        };
    }

    public static String dtype(DataType t) {
        return switch (t) {
            case DOUBLE -> "f64";
            case FLOAT -> "f32";
            case HALF -> "f16";
            case BFLOAT16 -> "bf16";
            case LONG -> "i64";
            case INT -> "i32";
            case SHORT -> "i16";
            case BYTE -> "i8";
            case UINT64 -> "u64";
            case UINT32 -> "u32";
            case UINT16 -> "u16";
            case UBYTE -> "u8";
            case BOOL -> "bool";
            default -> throw new IllegalArgumentException("ND4J type " + t + " has no tenplex dtype");
        };
    }

    /** A new c-ordered array holding a copy of the tensor's values. */
    public static INDArray toINDArray(Tensor t) {
        INDArray a = Nd4j.create(dataType(t.dtype()), t.shape(), 'c');
        if (t.data().length > 0) {
            ByteBuffer nio = a.data().asNio().order(ByteOrder.LITTLE_ENDIAN);
            nio.position(0);
            nio.put(t.data());
        }
        return a;
    }

    /** The array's values as a tensor (views and strided arrays are copied to c order first). */
    public static Tensor fromINDArray(INDArray a) {
        INDArray c = a.isView() || a.ordering() != 'c' ? a.dup('c') : a;
        long n = c.length();
        int bytes = Math.toIntExact(n * c.dataType().width());
        byte[] out = new byte[bytes];
        if (bytes > 0) {
            ByteBuffer nio = c.data().asNio().order(ByteOrder.LITTLE_ENDIAN);
            nio.position(Math.toIntExact(c.offset() * c.dataType().width()));
            nio.get(out);
        }
        return new Tensor(dtype(c.dataType()), c.shape(), out);
    }
}
