package io.tenplex.jobs.reconfigure;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The descriptions a daemon keeps by digest: only bytes that have the digest, within the budget, the
 * least recently used dropped first; a saved layout crosses as its entries and comes back equal; a
 * description that is not a layout is refused, naming what is wrong.
 */
class DescriptionsTest {
    private static byte[] bytes(int n, int fill) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) fill);
        return b;
    }

    @Test
    void keepsWhatHasItsDigest_withinTheBudget_leastRecentlyUsedDroppedFirst() {
        Descriptions kept = new Descriptions(250);
        byte[] a = bytes(100, 1);
        byte[] b = bytes(100, 2);
        byte[] c = bytes(100, 3);
        String da = Descriptions.digest(a);
        String db = Descriptions.digest(b);
        String dc = Descriptions.digest(c);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> kept.put(da, b)).getMessage()
                .contains("do not have the digest"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> kept.put(da, bytes(251, 1))).getMessage()
                .contains("over the limit"));
        kept.put(da, a);
        kept.put(db, b);
        assertArrayEquals(a, kept.get(da)); // a used: b is now the least recently used
        kept.put(dc, c);
        assertNull(kept.get(db), "dropped to make room");
        assertEquals(List.of(db), kept.missing(List.of(da, db, dc, db)));
    }

    @Test
    void aLayout_crossesAsItsEntries_andComesBackEqual() {
        CheckpointLayout l = CheckpointLayout.of(List.of(
                new CheckpointLayout.Item("model/w", true, 2, TensorMeta.of(DType.BF16, 7, 3)),
                new CheckpointLayout.Item("model/b", true, 1, null),
                new CheckpointLayout.Item("iteration.int", false, 0)));
        byte[] d = Descriptions.layout(l);
        assertEquals(l.items(), Descriptions.layout(d).items());
        assertArrayEquals(d, Descriptions.layout(Descriptions.layout(d)), "the same bytes, so the same digest");
    }

    @Test
    void aDescriptionThatIsNotALayout_isRefused() {
        for (String bad : List.of("{}", "[[\"w\"]]", "[[\"w\", true, 99, null, null]]", "[[\"w\", true, 1, \"f99\", [2]]]",
                "[[\"w\", true, 1, \"f32\", [-2]]]", "[[\"w\", true, 1, \"f32\", {\"a\": 1}]]", "not json")) {
            assertThrows(IllegalArgumentException.class, () -> Descriptions.layout(bad.getBytes(StandardCharsets.UTF_8)),
                    bad);
        }
    }

    @Test
    void theWorkersAddresses_crossInWorkerOrder_andComeBackEqual() {
        java.util.Map<Integer, String> a = new java.util.HashMap<>(java.util.Map.of(1000, "10.0.3.232:7070", 7,
                "worker-7.cluster.local:20010", 0, "[::1]:5"));
        byte[] d = Descriptions.addresses(a);
        assertEquals("{\"0\":\"[::1]:5\",\"7\":\"worker-7.cluster.local:20010\",\"1000\":\"10.0.3.232:7070\"}",
                new String(d, StandardCharsets.UTF_8));
        assertEquals(a, Descriptions.addresses(d));
        assertArrayEquals(d, Descriptions.addresses(new java.util.TreeMap<>(a)), "the same bytes, so the same digest");
    }

    @Test
    void aDescriptionThatIsNotTheWorkersAddresses_isRefused() {
        for (String bad : List.of("[]", "{\"-1\": \"a:1\"}", "{\"01\": \"a:1\"}", "{\"+1\": \"a:1\"}",
                "{\"1048576\": \"a:1\"}", "{\"1\": \"\"}", "{\"1\": 7}", "{\"1\": \"" + "h".repeat(301) + "\"}",
                "{\"x\": \"a:1\"}", "not json", "null", "{\"\uff11\": \"a:1\"}", "{\"2\":\"a:1\",\"1\":\"b:1\"}",
                "{\"1\":\"a:1\",\"1\":\"b:1\"}", "{\"1\": \"a:1\"}")) {
            String why = assertThrows(IllegalArgumentException.class,
                    () -> Descriptions.addresses(bad.getBytes(StandardCharsets.UTF_8)), bad).getMessage();
            assertTrue(why.startsWith("the workers' addresses"), why);
        }
        StringBuilder many = new StringBuilder("{");
        for (int w = 0; w <= io.tenplex.jobs.common.Limits.MAX_RANKS; w++) {
            many.append(w == 0 ? "" : ",").append('"').append(w).append("\":\"h:1\"");
        }
        byte[] tooMany = many.append('}').toString().getBytes(StandardCharsets.UTF_8);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Descriptions.addresses(tooMany)).getMessage()
                .contains("at most 16384 workers"));
    }
}
