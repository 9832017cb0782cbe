package io.tenplex.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.daemon.Daemon;
import io.tenplex.daemon.DaemonConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * tenplex-client alone (this module's test classpath has no ND4J; the enforcer bans it) against a
 * real daemon on loopback: tensors from plain bytes, save and load, sub-tensor reads, a rank's save
 * and load through the job API, NoCheckpoint where the Python client raises it.
 */
class PlainClientIT {
    private Daemon daemon;
    private TenplexClient client;

    @BeforeEach
    void start() throws Exception {
        daemon = Daemon.start(new DaemonConfig("127.0.0.1", 0, 64L << 20, "test", null, null));
        client = new TenplexClient("http://127.0.0.1:" + daemon.address().getPort(), null);
    }

    @AfterEach
    void stop() {
        daemon.close();
    }

    static Tensor f32(long[] shape, float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putFloat(x);
        }
        return new Tensor("f32", shape, b.array());
    }

    @Test
    void nd4j_isNotOnTheClasspath() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("org.nd4j.linalg.factory.Nd4j"));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.tenplex.client.nd4j.Nd4jTensors"));
    }

    @Test
    void saveLoad_andSubTensorReads_withoutNd4j() {
        Tensor w = f32(new long[] {3, 4}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        Map<String, Object> state = new LinkedHashMap<>();
        state.put("model", Map.of("w", w));
        state.put("iteration", 7L);
        state.put("lr", 0.25);
        client.save("/job/plain/save/0", state);
        Map<String, Object> back = client.load("/job/plain/save/0");
        assertEquals(w, ((Map<?, ?>) back.get("model")).get("w"));
        assertEquals(7L, back.get("iteration"));
        assertEquals(0.25, back.get("lr"));
        Tensor sub = client.getTensor("/job/plain/save/0/model/w" + TenplexClient.TENSOR, "1:3,1:3");
        assertEquals(f32(new long[] {2, 2}, 5, 6, 9, 10), sub);
        TenplexException missing = assertThrows(TenplexException.class, () -> client.getTensor("/job/plain/nope", null));
        assertEquals(404, missing.status());
        assertFalse(missing instanceof NoCheckpoint, "a missing tensor is not a missing checkpoint");
    }

    @Test
    void aRanksSaveAndLoad_throughTheJobApi_andNoCheckpointOnAFirstStart() {
        NoCheckpoint first = assertThrows(NoCheckpoint.class, () -> client.loadRank("fresh", 0));
        assertEquals(404, first.status());
        assertTrue(first.getMessage().startsWith("nothing to load for rank 0 of job fresh: "), first.getMessage());
        assertEquals(first.getMessage().indexOf("nothing to load"), first.getMessage().lastIndexOf("nothing to load"),
                "said once: " + first.getMessage());
        NoCheckpoint empty = assertThrows(NoCheckpoint.class, () -> client.load("/job/fresh/save/0"));
        assertEquals("not_found", empty.code());

        Tensor w = f32(new long[] {2}, 1.5f, -2f);
        client.saveRank("fresh", 10, 0, 1, Map.of("w", w, "step", 10L), null);
        Map<String, Object> loaded = client.loadRank("fresh", 0);
        assertEquals(w, loaded.get("w"));
        assertEquals(10L, loaded.get("step"));
        assertFalse(client.shouldStop("fresh", 10));
    }
}
