package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.memory.Allocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** No entry ends up more than {@link StorePath#MAX_DEPTH} components deep, whichever way it gets there. */
class DepthLimitTest {
    private final TensorStore store = new TensorStore(new Allocator(1 << 20, 256), 64);

    @AfterEach
    void close() {
        store.close();
    }

    private static StorePath chain(String top, int depth) {
        return StorePath.parse(top + "/d".repeat(depth - 1));
    }

    @Test
    void aMoveOrSnapshotThatWouldNestATreeTooDeep_isRefused_andChangesNothing() {
        store.mkdirs(chain("/a", 1500)); // /a and 1499 directories below it
        Fixtures.putF32(store, chain("/a", 1500) + "/t", 1); // 1501 components
        store.mkdirs(chain("/b", 600));
        long nodes = store.totals()[3];
        StorePath under = chain("/b", 600).child("a"); // the tensor would be 2101 deep
        StoreException e = assertThrows(StoreException.class, () -> store.move(StorePath.parse("/a"), under));
        assertEquals(StoreException.Kind.BAD_REQUEST, e.kind());
        assertTrue(e.getMessage().contains("more than 2048 components"), e.getMessage());
        e = assertThrows(StoreException.class, () -> store.snapshot(StorePath.parse("/a"), under));
        assertEquals(StoreException.Kind.BAD_REQUEST, e.kind());
        assertEquals(nodes, store.totals()[3]);
        assertTrue(store.stat(under).isEmpty());
        assertEquals(1, store.walk(StorePath.parse("/a"), false).size());

        StorePath fits = chain("/b", 547).child("a"); // the tensor is 2048 deep
        store.snapshot(StorePath.parse("/a"), fits);
        store.move(StorePath.parse("/a"), chain("/b", 546).child("a2"));
        assertEquals(2, store.walk(StorePath.root(), false).size());
        assertEquals(2048, store.walk(fits, false).get(0).path().parts().size());
    }
}
