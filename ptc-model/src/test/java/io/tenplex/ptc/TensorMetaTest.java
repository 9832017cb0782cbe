package io.tenplex.ptc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class TensorMetaTest {

    @Test
    void sidecar_isThePrototypeLayout() {
        assertEquals("f32\n2\n3\n4\n", TensorMeta.of(DType.F32, 3, 4).toSidecar());
        assertEquals("i64\n0\n", TensorMeta.of(DType.I64).toSidecar());
    }

    @Test
    void sidecar_roundTrips() {
        TensorMeta m = TensorMeta.of(DType.BF16, 5, 0, 7);
        assertEquals(m, TensorMeta.parseSidecar(m.toSidecar()));
        assertEquals(0, m.byteSize());
        assertEquals(TensorMeta.of(DType.U8), TensorMeta.parseSidecar("u8\n0\n"));
    }

    @Test
    void sidecar_wrongRank_rejected() {
        assertThrows(IllegalArgumentException.class, () -> TensorMeta.parseSidecar("f32\n3\n1\n2\n"));
    }

    @Test
    void byteSize_and_dtypeNames() {
        assertEquals(48, TensorMeta.of(DType.F32, 3, 4).byteSize());
        assertEquals(DType.F32, DType.fromName("float32"));
        assertEquals(DType.F32, DType.fromName("f32"));
        assertEquals(DType.BF16, DType.fromName("bfloat16"));
        assertEquals(DType.BOOL, DType.fromName("bool"));
        assertEquals("<f2", DType.F16.npyDescr());
        assertEquals(DType.U8, DType.fromNpyDescr("|u1"));
        assertEquals(DType.C64, DType.fromName("complex64"));
        assertEquals(DType.C128, DType.fromNpyDescr("<c16"));
        assertEquals(16 * 6, TensorMeta.of(DType.C128, 2, 3).byteSize());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DType.fromName("complex256"));
        assertEquals(true, e.getMessage().startsWith("unknown dtype 'complex256'"));
    }

    @Test
    void shape_parse_wireForm() {
        assertEquals(Shape.of(3, 4), Shape.parse("3,4"));
        assertEquals(Shape.scalar(), Shape.parse(""));
        assertThrows(IllegalArgumentException.class, () -> Shape.parse("3,-1"));
        assertThrows(IllegalArgumentException.class, () -> Shape.parse("3,x"));
    }
}
