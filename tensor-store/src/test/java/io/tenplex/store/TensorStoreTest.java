package io.tenplex.store;

import static io.tenplex.store.Fixtures.putF32;
import static io.tenplex.store.Fixtures.putFile;
import static io.tenplex.store.Fixtures.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TensorStoreTest {
    private final TensorStore store = new TensorStore(new Allocator(1 << 20, 256), 64);

    @AfterEach
    void noMemoryOutstanding() {
        store.close(); // throws if any bytes are still referenced
    }

    private static List<String> names(List<Entry> entries) {
        return entries.stream().map(e -> e.path().toString()).toList();
    }

    @Test
    void put_createsParents_andListsInCreationOrder() {
        putF32(store, "/job/a/save/0/w.numpy.ndarray", 3, 4);
        putFile(store, "job/a/iter", "7".getBytes(StandardCharsets.UTF_8), false);
        putFile(store, "/job/a/save/0/b.int", "1".getBytes(StandardCharsets.UTF_8), false);
        assertEquals(List.of("/job/a/save", "/job/a/iter"), names(store.list(StorePath.parse("/job/a"), false)));
        assertEquals(List.of("/job/a/save/0/w.numpy.ndarray.meta", "/job/a/save/0/w.numpy.ndarray",
                "/job/a/save/0/b.int", "/job/a/iter"), names(store.walk(StorePath.parse("/job/a"), true)));
        assertEquals("f32\n2\n3\n4\n", new String(readAll(store, "/job/a/save/0/w.numpy.ndarray.meta"),
                StandardCharsets.US_ASCII));
    }

    @Test
    void put_existingWithoutReplace_conflicts_andKeepsOldValue() {
        putFile(store, "/f", new byte[] {1}, false);
        StoreException e = assertThrows(StoreException.class, () -> putFile(store, "/f", new byte[] {2}, false));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertArrayEquals(new byte[] {1}, readAll(store, "/f"));
        putFile(store, "/f", new byte[] {3, 4}, true);
        assertArrayEquals(new byte[] {3, 4}, readAll(store, "/f"));
        assertEquals(2, store.allocator().usedBytes());
    }

    @Test
    void put_underAFile_orOverADirectory_orOnASidecar_conflicts() {
        putFile(store, "/a/f", new byte[] {1}, false);
        putF32(store, "/a/t", 2);
        long used = store.allocator().usedBytes();
        assertEquals(StoreException.Kind.CONFLICT,
                assertThrows(StoreException.class, () -> putFile(store, "/a/f/x", new byte[] {1}, false)).kind());
        assertEquals(StoreException.Kind.CONFLICT,
                assertThrows(StoreException.class, () -> putFile(store, "/a", new byte[] {1}, true)).kind());
        assertEquals(StoreException.Kind.CONFLICT,
                assertThrows(StoreException.class, () -> putFile(store, "/a/t.meta", new byte[] {1}, true)).kind());
        putFile(store, "/a/u.meta", new byte[] {1}, false);
        assertEquals(StoreException.Kind.CONFLICT,
                assertThrows(StoreException.class, () -> putF32(store, "/a/u", 1)).kind());
        assertEquals(used + 1, store.allocator().usedBytes());
    }

    @Test
    void delete_isRecursive_countsLikeThePrototype_andFreesMemory() {
        putF32(store, "/j/save/0/w", 3, 4);
        putFile(store, "/j/save/0/x.int", new byte[] {1}, false);
        putFile(store, "/j/iter", new byte[] {1}, false);
        DeleteCounts c = store.delete(StorePath.parse("/j/save"));
        assertEquals("3 2\n", c.toWire());
        assertEquals(1, store.allocator().usedBytes());
        assertEquals(StoreException.Kind.NOT_FOUND,
                assertThrows(StoreException.class, () -> store.delete(StorePath.parse("/j/save"))).kind());
        store.delete(StorePath.parse("/j"));
        assertEquals(0, store.allocator().usedBytes());
        assertEquals(0, store.allocator().liveBlobs());
    }

    @Test
    void openReference_survivesDelete_andFreesOnClose() {
        putF32(store, "/t", 4);
        DataRef ref = store.open(StorePath.parse("/t"));
        store.delete(StorePath.parse("/t"));
        assertEquals(16, store.allocator().usedBytes());
        assertEquals(16, ref.size());
        ref.close();
        assertEquals(0, store.allocator().usedBytes());
    }

    @Test
    void move_replacesAWholeTree_atomically_andFreesTheOld() {
        putF32(store, "/j/load/0/w", 4);
        putF32(store, "/j/load/1/w", 4);
        putF32(store, "/j/staging/p/load/0/w", 8);
        store.move(StorePath.parse("/j/staging/p/load"), StorePath.parse("/j/load"));
        assertEquals(List.of("/j/load/0/w"), names(store.walk(StorePath.parse("/j/load"), false)));
        assertEquals(32, store.stat(StorePath.parse("/j/load/0/w")).orElseThrow().size());
        assertEquals(32, store.allocator().usedBytes());
        assertEquals(StoreException.Kind.NOT_FOUND, assertThrows(StoreException.class,
                () -> store.move(StorePath.parse("/j/staging/p/load"), StorePath.parse("/j/load"))).kind());
        assertEquals(StoreException.Kind.CONFLICT, assertThrows(StoreException.class,
                () -> store.move(StorePath.parse("/j"), StorePath.parse("/j/load/x"))).kind());
    }

    @Test
    void link_sharesBytesWithoutCopying() {
        putF32(store, "/a", 4);
        store.link(StorePath.parse("/a"), StorePath.parse("/b/c"), false);
        assertEquals(16, store.allocator().usedBytes());
        store.delete(StorePath.parse("/a"));
        assertArrayEquals(Fixtures.iota32(4), readAll(store, "/b/c"));
    }


    @Test
    void snapshot_copiesATreeSharingBytes_andIsolatesLaterWrites() {
        putF32(store, "/j/save/0/model/w", 4);
        store.mkdirs(StorePath.parse("/j/save/0/empty"));
        putFile(store, "/j/save/0/iteration.int", "5".getBytes(StandardCharsets.US_ASCII), false);
        store.snapshot(StorePath.parse("/j/save/0"), StorePath.parse("/j/generations/5/0"));
        assertEquals(17, store.allocator().usedBytes()); // shared, not copied
        Fixtures.putTensor(store, "/j/save/0/model/w", TensorMeta.of(DType.F32, 8), Fixtures.iota32(8), true);
        assertEquals(16, store.stat(StorePath.parse("/j/generations/5/0/model/w")).orElseThrow().size());
        assertArrayEquals(Fixtures.iota32(4), readAll(store, "/j/generations/5/0/model/w"));
        assertEquals(List.of("/j/generations/5/0/model", "/j/generations/5/0/empty",
                "/j/generations/5/0/iteration.int"), names(store.list(StorePath.parse("/j/generations/5/0"), false)));
        assertEquals(StoreException.Kind.CONFLICT, assertThrows(StoreException.class,
                () -> store.snapshot(StorePath.parse("/j/save/0"), StorePath.parse("/j/generations/5/0"))).kind());
        assertEquals(StoreException.Kind.NOT_FOUND, assertThrows(StoreException.class,
                () -> store.snapshot(StorePath.parse("/j/save/9"), StorePath.parse("/j/generations/5/9"))).kind());
        assertEquals(StoreException.Kind.CONFLICT, assertThrows(StoreException.class,
                () -> store.snapshot(StorePath.parse("/j/save"), StorePath.parse("/j/save/0/x"))).kind());
        assertEquals(2, store.totals()[0]); // tensors: the new working w and the snapshot's
        assertEquals(2, store.totals()[1]); // files: iteration.int under both names
    }
    @Test
    void budget_exceeded_leavesStoreUnchanged() {
        TensorStore small = new TensorStore(new Allocator(100), 64);
        putFile(small, "/a", new byte[60], false);
        assertThrows(RuntimeException.class, () -> putFile(small, "/b", new byte[60], false));
        assertTrue(small.stat(StorePath.parse("/b")).isEmpty());
        assertEquals(60, small.allocator().usedBytes());
        small.close();
    }

    @Test
    void paths_rejectRelativeComponents() {
        for (String bad : new String[] {"/a/../b", "./a", "/a/./b"}) {
            assertEquals(StoreException.Kind.BAD_REQUEST,
                    assertThrows(StoreException.class, () -> StorePath.parse(bad)).kind());
        }
        assertEquals(StorePath.parse("/job/x/iter"), StorePath.parse("job//x/iter/"));
    }

    @Test
    void stat_reportsTypeAndMeta() {
        putTensorMeta();
        Entry e = store.stat(StorePath.parse("/m")).orElseThrow();
        assertEquals(EntryType.TENSOR, e.type());
        assertEquals(TensorMeta.of(DType.I16, 5), e.meta());
        assertEquals(10, e.size());
        assertEquals(EntryType.SIDECAR, store.stat(StorePath.parse("/m.meta")).orElseThrow().type());
        assertEquals(EntryType.DIR, store.stat(StorePath.root()).orElseThrow().type());
    }

    private void putTensorMeta() {
        Fixtures.putTensor(store, "/m", TensorMeta.of(DType.I16, 5), new byte[10], false);
    }

    @Test
    void refusals_carryAPreciseKind_underTheirGeneralOne() {
        putFile(store, "/d/f", new byte[] {1}, false);
        putF32(store, "/d/t", 1);
        record Case(org.junit.jupiter.api.function.Executable op, StoreException.Kind general,
                StoreException.Kind detail) {}
        List<Case> cases = List.of(
                new Case(() -> putFile(store, "/d/f", new byte[] {1}, false), StoreException.Kind.CONFLICT,
                        StoreException.Kind.EXISTS),
                new Case(() -> putFile(store, "/d/f/x", new byte[] {1}, false), StoreException.Kind.CONFLICT,
                        StoreException.Kind.NOT_A_DIRECTORY),
                new Case(() -> putFile(store, "/d", new byte[] {1}, true), StoreException.Kind.CONFLICT,
                        StoreException.Kind.IS_A_DIRECTORY),
                new Case(() -> putFile(store, "/d/t.meta", new byte[] {1}, true), StoreException.Kind.CONFLICT,
                        StoreException.Kind.EXISTS),
                new Case(() -> store.mkdirs(StorePath.parse("/d/f/x")), StoreException.Kind.CONFLICT,
                        StoreException.Kind.NOT_A_DIRECTORY),
                new Case(() -> store.list(StorePath.parse("/d/f"), false), StoreException.Kind.CONFLICT,
                        StoreException.Kind.NOT_A_DIRECTORY),
                new Case(() -> store.open(StorePath.parse("/d")), StoreException.Kind.CONFLICT,
                        StoreException.Kind.IS_A_DIRECTORY),
                new Case(() -> store.openTensor(StorePath.parse("/d/f")), StoreException.Kind.NOT_FOUND,
                        StoreException.Kind.WRONG_TYPE),
                new Case(() -> store.delete(StorePath.parse("/d/t.meta")), StoreException.Kind.CONFLICT,
                        StoreException.Kind.WRONG_TYPE),
                new Case(() -> store.snapshot(StorePath.parse("/d/f"), StorePath.parse("/d/t")),
                        StoreException.Kind.CONFLICT, StoreException.Kind.EXISTS),
                new Case(() -> store.move(StorePath.parse("/d/f"), StorePath.parse("/d/t/x")),
                        StoreException.Kind.CONFLICT, StoreException.Kind.NOT_A_DIRECTORY),
                new Case(() -> store.delete(StorePath.parse("/none")), StoreException.Kind.NOT_FOUND,
                        StoreException.Kind.NOT_FOUND));
        for (Case c : cases) {
            StoreException e = assertThrows(StoreException.class, c.op());
            assertEquals(c.general(), e.kind(), e.getMessage());
            assertEquals(c.detail(), e.detail(), e.getMessage());
            assertEquals(c.detail().name().toLowerCase(java.util.Locale.ROOT), e.code());
        }
    }

    /** A tensor of a 251-255 byte name was stored, and then no listing with sidecars of its directory could be made. */
    @Test
    void aTensorName_leavesRoomForItsSidecarsName() {
        String longest = "t".repeat(250);
        putF32(store, "/d/" + longest, 2);
        assertEquals(List.of("/d/" + longest + ".meta", "/d/" + longest),
                store.list(StorePath.parse("/d"), true).stream().map(e -> e.path().toString()).toList());
        for (String name : List.of("t".repeat(251), "é".repeat(126), "x".repeat(255))) {
            StoreException e = assertThrows(StoreException.class, () -> putF32(store, "/d/" + name, 2));
            assertTrue(e.getMessage().contains("longer than 250 bytes"), e.getMessage());
            assertThrows(StoreException.class, () -> store.move(StorePath.parse("/d/" + longest),
                    StorePath.parse("/d/" + name)));
            assertThrows(StoreException.class, () -> store.snapshot(StorePath.parse("/d/" + longest),
                    StorePath.parse("/e/" + name)));
        }
        putFile(store, "/d/" + "f".repeat(255), new byte[] {1}, false); // a file has no sidecar
        assertEquals(3, store.list(StorePath.parse("/d"), true).size());
        assertEquals(3, store.totals()[3], "d, the tensor and the file");
    }
}
