package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The store's count of its nodes stays the number of directories and entries in its tree through a seeded random
 * run of every kind of change, under a small and changing limit; anything refused changes nothing, and the limit
 * refuses exactly what would add nodes beyond it.
 */
class NodeAccountingTest {
    private static final String[] NAMES = {"a", "b", "c", "a.meta"};

    private final Allocator allocator = new Allocator(1 << 22, 256);
    private final TensorStore store = new TensorStore(allocator, 64);

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void theCountIsTheTree_andARefusalChangesNothing(long seed) {
        Random r = new Random(seed);
        long limit = 20;
        store.limitNodes(limit);
        for (int step = 0; step < 3000; step++) {
            if (r.nextInt(50) == 0) {
                limit = 5 + r.nextInt(40);
                store.limitNodes(limit);
            }
            List<String> before = dump();
            long nodesBefore = store.totals()[3];
            int op = r.nextInt(7);
            String what = "step " + step + " op " + op;
            StoreException refused = null;
            try {
                apply(r, op, false);
            } catch (StoreException e) {
                refused = e;
            }
            List<String> after = dump();
            long nodes = store.totals()[3];
            assertEquals(after.size(), nodes, what + ": the count is the tree's\n" + after);
            checkTotals(after, what);
            if (refused != null) {
                assertEquals(before, after, what + ": refused (" + refused.getMessage() + ") yet changed");
                if (refused.kind() == StoreException.Kind.INSUFFICIENT_STORAGE) {
                    checkWouldExceed(r, op, limit, nodesBefore, what + " (" + refused.getMessage() + ")");
                }
            } else if (nodes > nodesBefore) {
                assertTrue(nodes <= limit, what + ": " + nodes + " nodes exceed the limit of " + limit);
            }
        }
        store.limitNodes(Long.MAX_VALUE);
        store.close();
        assertEquals(0, allocator.usedBytes());
    }

    @Test
    void aStoreAboveALoweredLimit_takesWhatAddsNoNode() {
        Fixtures.putF32(store, "/j/w", 4);
        Fixtures.putF32(store, "/j/v", 4);
        store.limitNodes(1); // 3 held
        Fixtures.putTensor(store, "/j/w", TensorMeta.of(DType.F32, 1), Fixtures.iota32(1), true); // a replace
        store.mkdirs(StorePath.parse("/j"));
        store.move(StorePath.parse("/j/v"), StorePath.parse("/j/w"));
        assertEquals(2, store.totals()[3]);
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, assertThrows(StoreException.class,
                () -> store.mkdirs(StorePath.parse("/j/k"))).kind());
        store.limitNodes(Long.MAX_VALUE);
        store.close();
    }

    /** The refused operation, done again without a limit, adds nodes beyond it. */
    private void checkWouldExceed(Random r, int op, long limit, long nodesBefore, String what) {
        long seed = lastSeed;
        store.limitNodes(Long.MAX_VALUE);
        apply(new Random(seed), op, true);
        long nodes = store.totals()[3];
        assertTrue(nodes > limit && nodes > nodesBefore, what + ": refused, but makes " + nodes + " of " + limit
                + " from " + nodesBefore);
        store.limitNodes(limit); // the store is now over its limit: what adds nothing must still go through
    }

    private long lastSeed;

    private void apply(Random r, int op, boolean replay) {
        if (!replay) {
            lastSeed = r.nextLong();
        }
        Random x = replay ? r : new Random(lastSeed);
        switch (op) {
            case 0, 1 -> putBatch(x);
            case 2 -> store.mkdirs(path(x));
            case 3 -> store.move(path(x), path(x));
            case 4 -> store.snapshot(path(x), path(x));
            case 5 -> store.delete(path(x));
            default -> store.link(path(x), path(x), x.nextBoolean());
        }
    }

    private void putBatch(Random r) {
        int n = 1 + r.nextInt(4);
        boolean replace = r.nextInt(3) > 0;
        List<TensorStore.Put> puts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StorePath p = path(r);
            int size = r.nextInt(3);
            BlobWriter w = BlobWriter.allocate(allocator, size * 4L, 64);
            w.append(ByteBuffer.wrap(Fixtures.iota32(size)));
            puts.add(r.nextBoolean() ? new TensorStore.Put(p, TensorMeta.of(DType.F32, size), w.take(), w.checksums())
                    : TensorStore.Put.file(p, w.take(), w.checksums()));
        }
        store.putAll(puts, replace);
    }

    private static StorePath path(Random r) {
        int depth = 1 + r.nextInt(4);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < depth; i++) {
            b.append('/').append(NAMES[r.nextInt(NAMES.length)]);
        }
        return StorePath.parse(b.toString());
    }

    /** Every directory and entry below the root, with its type, size and children, found through listings. */
    private List<String> dump() {
        List<String> out = new ArrayList<>();
        dump(StorePath.root(), out);
        return out;
    }

    private void dump(StorePath dir, List<String> out) {
        for (Entry e : store.list(dir, false)) {
            out.add(e.path() + " " + e.type() + " " + e.size() + " " + e.children());
            if (e.type() == EntryType.DIR) {
                dump(e.path(), out);
            }
        }
    }

    private void checkTotals(List<String> dump, String what) {
        long tensors = dump.stream().filter(s -> s.contains(" TENSOR ")).count();
        long files = dump.stream().filter(s -> s.contains(" FILE ")).count();
        long bytes = dump.stream().filter(s -> s.contains(" TENSOR ")).mapToLong(s -> Long.parseLong(s.split(" ")[2]))
                .sum();
        long[] t = store.totals();
        assertEquals(tensors, t[0], what + ": tensors");
        assertEquals(files, t[1], what + ": files");
        assertEquals(bytes, t[2], what + ": tensor bytes");
        if (t[3] != dump.size()) {
            fail(what + ": " + t[3] + " counted, " + dump.size() + " there");
        }
    }
}
