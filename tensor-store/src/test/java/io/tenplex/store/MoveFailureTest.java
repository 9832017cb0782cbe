package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.memory.Allocator;
import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A move whose put into its target throws, as a map's resize does when the heap is full, leaves the
 * entry where it was, with its bytes, and the target without it. The full heap is stood in for by the
 * target directory's map, swapped for one whose put of a new name adds it and then throws: an edge of
 * the JVM that a test cannot reach otherwise.
 */
class MoveFailureTest {
    private final TensorStore store = new TensorStore(new Allocator(1 << 20, 256), 64);

    @AfterEach
    void close() {
        store.close(); // throws if the failed move lost the blob or held it twice
    }

    /** A directory map whose put of a new name adds it, then throws (the resize that runs out of heap). */
    private static final class ResizeOutOfHeap extends LinkedHashMap<String, Tree.Node> {
        ResizeOutOfHeap(Map<String, Tree.Node> from) {
            super(from);
        }

        @Override
        public Tree.Node put(String key, Tree.Node value) {
            boolean added = !containsKey(key);
            Tree.Node old = super.put(key, value);
            if (added) {
                throw new OutOfMemoryError("Java heap space (thrown by the test)");
            }
            return old;
        }
    }

    @Test
    void aMoveWhosePutThrows_leavesTheEntryAtItsSource_andTheTargetAsItWas() throws Exception {
        Fixtures.putF32(store, "/a/x", 7);
        Fixtures.putF32(store, "/b/kept", 3);
        byte[] bytes = Fixtures.readAll(store, "/a/x");
        long[] totals = store.totals();
        failingPuts(StorePath.parse("/b"));

        assertThrows(OutOfMemoryError.class, () -> store.move(StorePath.parse("/a/x"), StorePath.parse("/b/y")));

        assertArrayEquals(bytes, Fixtures.readAll(store, "/a/x"), "the entry is where it was, with its bytes");
        assertTrue(store.stat(StorePath.parse("/b/y")).isEmpty(), "the target holds nothing of it");
        assertEquals(List.of("/b/kept"), store.walk(StorePath.parse("/b"), false).stream()
                .map(e -> e.path().toString()).toList());
        assertArrayEquals(totals, store.totals(), "bytes, tensors and nodes counted as before");
        store.move(StorePath.parse("/a/x"), StorePath.parse("/c/x")); // the store goes on
        assertArrayEquals(bytes, Fixtures.readAll(store, "/c/x"));
    }

    @Test
    void aMoveOverAnExistingName_allocatesNothing_andReplacesIt() throws Exception {
        Fixtures.putF32(store, "/a/x", 7);
        Fixtures.putF32(store, "/b/y", 3);
        byte[] bytes = Fixtures.readAll(store, "/a/x");
        failingPuts(StorePath.parse("/b"));

        store.move(StorePath.parse("/a/x"), StorePath.parse("/b/y")); // a replace: no new name, no resize

        assertArrayEquals(bytes, Fixtures.readAll(store, "/b/y"));
        assertTrue(store.stat(StorePath.parse("/a/x")).isEmpty());
    }

    /** Swaps the map of directory {@code dir} for one whose put of a new name throws after adding it. */
    private void failingPuts(StorePath dir) throws Exception {
        Field f = TensorStore.class.getDeclaredField("tree");
        f.setAccessible(true);
        Tree.Dir d = (Tree.Dir) ((Tree) f.get(store)).lookup(dir);
        Field children = Tree.Dir.class.getDeclaredField("children");
        children.setAccessible(true);
        @SuppressWarnings("unchecked")
        Map<String, Tree.Node> now = (Map<String, Tree.Node>) children.get(d);
        children.set(d, new ResizeOutOfHeap(now));
    }
}
