package io.tenplex.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlobWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A publication that throws part-way, an Error included, leaves the tree and its accounting as they were. */
class PublicationTest {
    private final Allocator allocator = new Allocator(1 << 20, 256);

    /** A tree whose {@code mkdirs} throws, as a full heap would, once it has made {@code allowed} directories. */
    private static final class FailingTree extends Tree {
        private int allowed;

        FailingTree(int allowed) {
            this.allowed = allowed;
        }

        /** Calls of {@code copy} before one throws (negative: none throws). */
        private int copies = -1;

        @Override
        Node copy(Node n) {
            if (copies-- == 0) {
                throw new OutOfMemoryError("Java heap space (thrown by the test)");
            }
            return super.copy(n);
        }

        /** Calls of {@code account} before one throws (negative: none throws). */
        private int accounts = -1;

        @Override
        void account(Data d, int sign) {
            if (accounts-- == 0) {
                throw new OutOfMemoryError("Java heap space (thrown by the test)");
            }
            super.account(d, sign);
        }

        @Override
        Dir mkdirs(StorePath path, Made made) {
            if (allowed-- == 0) {
                throw new OutOfMemoryError("Java heap space (thrown by the test)");
            }
            return super.mkdirs(path, made);
        }
    }

    private TensorStore.Put tensor(String path, int n) {
        BlobWriter w = BlobWriter.allocate(allocator, n * 4L, 64);
        w.append(ByteBuffer.wrap(Fixtures.iota32(n)));
        return new TensorStore.Put(StorePath.parse(path), TensorMeta.of(DType.F32, n), w.take(), w.checksums());
    }

    @Test
    void anErrorPartWay_putsBackWhatEachStepReplaced() {
        FailingTree tree = new FailingTree(1);
        TensorStore.Put kept = tensor("/a/x", 3);
        new Publication(tree, 1).publish(List.of(kept), new ArrayList<>()); // one mkdirs
        Tree.Node before = tree.lookup(StorePath.parse("/a/x"));
        long tensors = tree.tensorCount;
        long bytes = tree.tensorBytes;

        long nodes = tree.nodes;
        List<TensorStore.Put> puts = List.of(tensor("/a/x", 5), tensor("/a/y", 7), tensor("/n1/n2/v", 1),
                tensor("/b/z", 9));
        List<Blob> toRelease = new ArrayList<>();
        // /a's mkdirs serves /a/x and /a/y, /n1/n2's makes two directories, /b's throws
        tree.allowed = 2;
        assertThrows(OutOfMemoryError.class, () -> new Publication(tree, puts.size()).publish(puts, toRelease));

        assertSame(before, tree.lookup(StorePath.parse("/a/x")), "the replaced entry is back");
        assertNull(tree.lookup(StorePath.parse("/a/y")), "a new entry is gone again");
        assertNull(tree.lookup(StorePath.parse("/b/z")));
        assertNull(tree.lookup(StorePath.parse("/n1")), "the directories made on the way are gone too");
        assertEquals(nodes, tree.nodes);
        assertEquals(nodes, Tree.count(tree.root) - 1);
        assertEquals(tensors, tree.tensorCount);
        assertEquals(bytes, tree.tensorBytes);
        assertTrue(toRelease.isEmpty(), "the replaced entry's blob is the tree's again, not released");
    }

    /** A step that throws after its put went in, before it was counted: a new entry or a replace. */
    @Test
    void anErrorAfterAStepsPut_takesItAway_andCountsNothing() {
        FailingTree tree = new FailingTree(-1);
        new Publication(tree, 1).publish(List.of(tensor("/a/x", 3)), new ArrayList<>());
        Tree.Node x = tree.lookup(StorePath.parse("/a/x"));
        long nodes = tree.nodes;
        long bytes = tree.tensorBytes;
        for (String path : List.of("/a/y", "/a/x")) {
            tree.accounts = 0; // the first step's first count throws
            List<TensorStore.Put> puts = List.of(tensor(path, 5));
            assertThrows(OutOfMemoryError.class, () -> new Publication(tree, 1).publish(puts, new ArrayList<>()),
                    path);
            assertSame(x, tree.lookup(StorePath.parse("/a/x")), path);
            assertNull(tree.lookup(StorePath.parse("/a/y")), path);
            assertEquals(nodes, Tree.count(tree.root) - 1, path);
            assertEquals(nodes, tree.nodes, path);
            assertEquals(1, tree.tensorCount, path);
            assertEquals(bytes, tree.tensorBytes, path);
            puts.get(0).blob().release();
        }
    }

    /** A snapshot's copy that throws part-way, as a full heap would, leaves no node counted and no blob held. */
    @Test
    void anErrorPartWayThroughACopy_leavesNothingCountedOrHeld() {
        FailingTree tree = new FailingTree(-1);
        new Publication(tree, 3).publish(List.of(tensor("/a/x", 3), tensor("/a/y", 5), tensor("/a/z", 7)),
                new ArrayList<>());
        long nodes = tree.nodes;
        long bytes = tree.tensorBytes;
        tree.copies = 3; // /a, /a/x and /a/y are copied, /a/z throws
        assertThrows(OutOfMemoryError.class,
                () -> tree.putCopy(tree.lookup(StorePath.parse("/a")), StorePath.parse("/b/c")));
        assertNull(tree.lookup(StorePath.parse("/b/c")));
        assertEquals(Tree.count(tree.root) - 1, tree.nodes);
        assertEquals(nodes, tree.nodes);
        assertEquals(3, tree.tensorCount);
        assertEquals(bytes, tree.tensorBytes);
        List<Blob> toRelease = new ArrayList<>();
        tree.collect(tree.lookup(StorePath.parse("/a")), toRelease, new long[3]);
        toRelease.forEach(Blob::release);
        assertEquals(0, allocator.usedBytes(), "the tree held each blob once: none is left");

        FailingTree whole = new FailingTree(-1);
        new Publication(whole, 2).publish(List.of(tensor("/a/x", 3), tensor("/a/y", 5)), new ArrayList<>());
        whole.putCopy(whole.lookup(StorePath.parse("/a")), StorePath.parse("/b/c"));
        assertEquals(7, whole.nodes); // /a, /b, /b/c and two entries in each
        assertEquals(7, Tree.count(whole.root) - 1);
        assertEquals(4, whole.tensorCount);
    }

    @Test
    void aStoreRefusingABatchPartWay_releasesItsBlobs_andKeepsWhatItHeld() {
        TensorStore store = new TensorStore(allocator, 64);
        Fixtures.putF32(store, "/j/w", 4);
        long used = allocator.usedBytes();
        List<TensorStore.Put> puts = List.of(tensor("/j/v", 2), tensor("/j/w", 3));
        assertThrows(StoreException.class, () -> store.putAll(puts, false)); // /j/w exists
        assertEquals(used, allocator.usedBytes(), "the refused batch's blobs were released");
        assertTrue(store.stat(StorePath.parse("/j/v")).isEmpty());
        assertEquals(16, Fixtures.readAll(store, "/j/w").length);
    }

    @Test
    void theNodesOverTheLimit_areRefused_exactly_andLeaveNothing() {
        TensorStore store = new TensorStore(allocator, 64);
        Fixtures.putF32(store, "/j/w", 4); // 2 nodes
        store.limitNodes(8);
        long used = allocator.usedBytes();
        // 7 more nodes: /j/a, /j/a/b, /j/a/b/c and four entries in c; 9 in all
        List<TensorStore.Put> tooMany = List.of(tensor("/j/a/b/c/1", 1), tensor("/j/a/b/c/2", 1),
                tensor("/j/a/b/c/3", 1), tensor("/j/a/b/c/4", 1));
        StoreException e = assertThrows(StoreException.class, () -> store.putAll(tooMany, false));
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE, e.kind());
        assertTrue(e.getMessage().contains("needs 7 more directories and entries, and the store holds 2 of the 8"),
                e.getMessage());
        assertTrue(store.stat(StorePath.parse("/j/a")).isEmpty(), "no directory is left behind");
        assertEquals(used, allocator.usedBytes(), "the refused entries' blobs were released");
        assertEquals(2, store.totals()[3]);

        store.putAll(tooMany.subList(0, 3).stream().map(p -> tensor(p.path().toString(), 1)).toList(), false);
        assertEquals(8, store.totals()[3], "exactly at the limit");
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE,
                assertThrows(StoreException.class, () -> store.mkdirs(StorePath.parse("/k"))).kind());
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE,
                assertThrows(StoreException.class, () -> store.snapshot(StorePath.parse("/j/w"),
                        StorePath.parse("/j/w2"))).kind());
        assertEquals(StoreException.Kind.INSUFFICIENT_STORAGE,
                assertThrows(StoreException.class, () -> store.move(StorePath.parse("/j/w"),
                        StorePath.parse("/m/w"))).kind());
        store.move(StorePath.parse("/j/a/b/c/1"), StorePath.parse("/j/w")); // replacing: one node less
        assertEquals(7, store.totals()[3]);
        store.delete(StorePath.parse("/j/a"));
        assertEquals(2, store.totals()[3]);
        store.snapshot(StorePath.parse("/j"), StorePath.parse("/k"));
        assertEquals(4, store.totals()[3]);
        store.limitNodes(Long.MAX_VALUE);
        store.close();
    }
}
