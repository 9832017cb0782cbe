package io.tenplex.datasets.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.Npy;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class NpyRowFormatTest {
    private static byte[] npy(TensorMeta meta, long dataBytes) {
        byte[] header = Npy.header(meta);
        return Arrays.copyOf(header, (int) (header.length + dataBytes));
    }

    @Test
    void rowsOfAnOddSize_followTheHeader() throws Exception {
        byte[] f = npy(TensorMeta.of(DType.I8, 5, 3), 15);
        int header = f.length - 15;
        Samples s = Sources.find(new NpyRowFormat(), f);
        assertEquals(5, s.count());
        for (int i = 0; i < 5; i++) {
            assertEquals(header + 3L * i, s.begins()[i]);
            assertEquals(header + 3L * i + 3, s.ends()[i]);
        }
        assertEquals(0, Sources.find(new NpyRowFormat(), npy(TensorMeta.of(DType.F32, 0, 3), 0)).count());
    }

    @Test
    void aTruncatedArray_isRefused_namingTheSizeTheHeaderSays() {
        byte[] f = npy(TensorMeta.of(DType.I8, 5, 3), 14);
        String m = Sources.refusal(new NpyRowFormat(), f, f.length);
        assertTrue(m.contains("src.bin has " + f.length + " bytes, the header says " + (f.length + 1)), m);
    }

    @Test
    void aScalarOrAFileThatIsNotNpy_isRefused() {
        byte[] scalar = npy(TensorMeta.of(DType.F64), 8);
        assertTrue(Sources.refusal(new NpyRowFormat(), scalar, scalar.length).contains("holds a scalar"));
        byte[] text = Sources.ascii("not an array\n");
        assertTrue(Sources.refusal(new NpyRowFormat(), text, text.length).contains("is not a NumPy file we read"));
    }
}
