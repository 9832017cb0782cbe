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

        @Override
        Dir mkdirs(StorePath path) {
            if (allowed-- == 0) {
                throw new OutOfMemoryError("Java heap space (thrown by the test)");
            }
            return super.mkdirs(path);
        }
    }

    private TensorStore.Put tensor(String path, int n) {
        BlobWriter w = BlobWriter.allocate(allocator, n * 4L, 64);
        w.append(ByteBuffer.wrap(Fixtures.iota32(n)));
        return new TensorStore.Put(StorePath.parse(path), TensorMeta.of(DType.F32, n), w.take(), w.checksums());
    }

    @Test
    void anErrorPartWay_putsBackWhatEachStepReplaced() {
        FailingTree tree = new FailingTree(2);
        TensorStore.Put kept = tensor("/a/x", 3);
        new Publication(tree, 1).publish(List.of(kept), new ArrayList<>()); // one mkdirs
        Tree.Node before = tree.lookup(StorePath.parse("/a/x"));
        long tensors = tree.tensorCount;
        long bytes = tree.tensorBytes;

        List<TensorStore.Put> puts = List.of(tensor("/a/x", 5), tensor("/a/y", 7), tensor("/b/z", 9));
        List<Blob> toRelease = new ArrayList<>();
        // /a is made once for /a/x and /a/y (the second mkdirs), /b's mkdirs throws
        assertThrows(OutOfMemoryError.class, () -> new Publication(tree, puts.size()).publish(puts, toRelease));

        assertSame(before, tree.lookup(StorePath.parse("/a/x")), "the replaced entry is back");
        assertNull(tree.lookup(StorePath.parse("/a/y")), "a new entry is gone again");
        assertNull(tree.lookup(StorePath.parse("/b/z")));
        assertEquals(tensors, tree.tensorCount);
        assertEquals(bytes, tree.tensorBytes);
        assertTrue(toRelease.isEmpty(), "the replaced entry's blob is the tree's again, not released");
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
}
