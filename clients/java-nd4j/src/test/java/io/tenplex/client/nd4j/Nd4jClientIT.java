package io.tenplex.client.nd4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.client.TenplexClient;
import io.tenplex.client.TenplexException;
import io.tenplex.client.Tensor;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import io.tenplex.server.RestServer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

/** The JVM client with ND4J against a real REST server and store on loopback: INDArray interop, comparison, export. */
class Nd4jClientIT {
    private TensorStore store;
    private RestServer server;
    private TenplexClient client;

    @BeforeEach
    void start() throws Exception {
        store = new TensorStore(new Allocator(64L << 20));
        server = new RestServer(store, null);
        client = new TenplexClient("http://127.0.0.1:" + server.start("127.0.0.1", 0).getPort(), null);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    static Tensor f64(long[] shape, double... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (double x : v) {
            b.putDouble(x);
        }
        return new Tensor("f64", shape, b.array());
    }

    @Test
    void nd4j_roundTripsEveryDtype_andCopiesViewsCorrectly() {
        for (String dt : List.of("f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool")) {
            byte[] bytes = new byte[6 * Tensor.itemSize(dt)];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) (dt.equals("bool") ? i % 2 : (i * 7 + 1) & 0x3f); // small positive patterns: valid in every type
            }
            Tensor t = new Tensor(dt, new long[] {2, 3}, bytes);
            INDArray a = Nd4jTensors.toINDArray(t);
            assertEquals(Nd4jTensors.dataType(dt), a.dataType());
            assertEquals(t, Nd4jTensors.fromINDArray(a), dt);
        }
        Tensor scalar = f64(new long[0], 2.5);
        assertEquals(2.5, Nd4jTensors.toINDArray(scalar).getDouble(0));
        assertEquals(scalar, Nd4jTensors.fromINDArray(Nd4jTensors.toINDArray(scalar)));
        // a view with an offset (rows 1..2 of a 4x3 iota) comes back as its own values
        INDArray iota = Nd4j.arange(12).castTo(DataType.DOUBLE).reshape(4, 3);
        Tensor rows = Nd4jTensors.fromINDArray(iota.get(NDArrayIndex.interval(1, 3), NDArrayIndex.all()));
        assertEquals(f64(new long[] {2, 3}, 3, 4, 5, 6, 7, 8), rows);
        Tensor col = Nd4jTensors.fromINDArray(iota.get(NDArrayIndex.all(), NDArrayIndex.point(1)));
        assertEquals(f64(new long[] {4}, 1, 4, 7, 10), col);
    }

    @Test
    void saveLoad_rangeReads_andErrors() {
        Map<String, Object> state = new LinkedHashMap<>();
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("w", Nd4jTensors.fromINDArray(Nd4j.arange(12).castTo(DataType.FLOAT).reshape(3, 4)));
        state.put("model", model);
        state.put("iteration", 7L);
        state.put("lr", 0.25);
        state.put("name", "gpt");
        state.put("flag", false);
        state.put("nothing", null);
        state.put("empty", Map.of());
        client.save("/job/jc/save/0", state);
        Map<String, Object> back = client.load("/job/jc/save/0");
        assertEquals(model.get("w"), ((Map<?, ?>) back.get("model")).get("w"));
        assertEquals(7L, back.get("iteration"));
        assertEquals(0.25, back.get("lr"));
        assertEquals("gpt", back.get("name"));
        assertEquals(false, back.get("flag"));
        assertTrue(back.containsKey("nothing"));
        assertNull(back.get("nothing"));
        Tensor sub = client.getTensor("/job/jc/save/0/model/w" + TenplexClient.TENSOR, "1:3,1:3");
        assertArrayEquals(new long[] {2, 2}, sub.shape());
        INDArray s = Nd4jTensors.toINDArray(sub);
        assertEquals(5.0, s.getDouble(0, 0));
        assertEquals(10.0, s.getDouble(1, 1));
        TenplexException missing = assertThrows(TenplexException.class, () -> client.getTensor("/job/jc/nope", null));
        assertEquals(404, missing.status());
        assertEquals("not_found", missing.code());
        assertFalse(missing.getMessage().contains("{"), missing.getMessage()); // the reason, not the JSON body
        TenplexException range = assertThrows(TenplexException.class,
                () -> client.getTensor("/job/jc/save/0/model/w" + TenplexClient.TENSOR, "0:9"));
        assertEquals(400, range.status());
        assertTrue(range.getMessage().contains("out of bounds"), range.getMessage());
        assertEquals("bad_request", range.code());
        assertThrows(IllegalArgumentException.class, () -> client.save("/job/jc/x", Map.of("a/b", 1L)));
        assertEquals(404, assertThrows(TenplexException.class, () -> client.shouldStop("jc", 0)).status()); // no job routes here
    }

    @Test
    void comparison_findsTheLargestDifference_andHandlesNaN() {
        Tensor a = f64(new long[] {2, 2}, 1, 2, 3, Double.NaN);
        Tensor b = f64(new long[] {2, 2}, 1, 2 + 1e-6, 3, Double.NaN);
        List<StateComparison.Result> r = StateComparison.compare(Map.of("t", a), Map.of("t", b), 1e-9, 0);
        assertEquals(1, r.get(0).violations());
        assertEquals(1, r.get(0).worstIndex());
        assertEquals(1e-6, r.get(0).maxAbsDiff(), 1e-12);
        assertTrue(StateComparison.compare(Map.of("t", a), Map.of("t", b), 1e-6, 0).get(0).ok());
        assertTrue(StateComparison.compare(Map.of("t", a), Map.of("t", a), 0, 0).get(0).ok()); // NaN == NaN
        Tensor c = f64(new long[] {2, 2}, 1, 2, 3, 4);
        assertEquals(1, StateComparison.compare(Map.of("t", a), Map.of("t", c), 1, 1).get(0).violations());
        List<StateComparison.Result> shapes = StateComparison.compare(Map.of("t", a, "u", a),
                Map.of("t", f64(new long[] {4}, 1, 2, 3, 4)), 0, 0);
        assertTrue(shapes.get(0).problem().startsWith("shapes differ"));
        assertEquals("only in the first state", shapes.get(1).problem());
    }

    @Test
    void export_castsFloatsToBf16AndF16_andCopiesTheRest() {
        // a rank's tree as a generation holds it (this bare store server has no seal route, and clients may not
        // write below generations/: CliIT exports a sealed generation through a daemon)
        client.save("/job/jc/save/0", Map.of("w", f64(new long[] {3}, 1.0, 1.01171875, -65504.0),
                "ids", new Tensor("i64", new long[] {1}, new byte[8]), "step", 3L));
        assertEquals(2, Export.export(client, "/job/jc/save", "/job/jc/exports/3-bf16", "bf16") + 1);
        Tensor w = client.getTensor("/job/jc/exports/3-bf16/0/w" + TenplexClient.TENSOR, null);
        assertEquals("bf16", w.dtype());
        ByteBuffer bits = ByteBuffer.wrap(w.data()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x3F80, bits.getShort(0) & 0xffff); // 1.0
        assertEquals(0x3F82, bits.getShort(2) & 0xffff); // 1 + 3/256 rounds to nearest even: 1.015625
        assertEquals("i64", client.getTensor("/job/jc/exports/3-bf16/0/ids" + TenplexClient.TENSOR, null).dtype());
        assertEquals("3", new String(client.getFile("/job/jc/exports/3-bf16/0/step.int")));
        Export.export(client, "/job/jc/save", "/job/jc/exports/3-f16", "f16");
        Tensor h = client.getTensor("/job/jc/exports/3-f16/0/w" + TenplexClient.TENSOR, null);
        assertEquals((short) 0xFBFF, ByteBuffer.wrap(h.data()).order(ByteOrder.LITTLE_ENDIAN).getShort(4)); // -65504
        assertThrows(IllegalArgumentException.class, () -> Export.export(client, "/job/jc", "/x", "i8"));
    }
}
