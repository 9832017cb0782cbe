package io.tenplex.fuse;

import static io.tenplex.store.Fixtures.putF32;
import static io.tenplex.store.Fixtures.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.Fixtures;
import io.tenplex.store.Npy;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The file system logic without a mount: views, writes, errno values, and no leaked handles or bytes. */
class FsLogicTest {
    private final TensorStore store = new TensorStore(new Allocator(1 << 20, 1 << 16), 64);
    private final FsLogic fs = new FsLogic(store);

    @AfterEach
    void noLeaks() {
        assertEquals(0, fs.openHandles());
        store.close(); // throws if bytes are still referenced
    }

    private static int errno(Executable e) {
        return assertThrows(FsLogic.FsError.class, e).errno();
    }

    private byte[] readWhole(String path) {
        long fh = fs.open(path, false, false);
        try {
            ByteBuffer b = ByteBuffer.allocate((int) fs.getattr(path).size() + 10);
            int n;
            long off = 0;
            while ((n = fs.read(fh, off, b.slice(b.position(), Math.min(7, b.remaining())))) > 0) { // small reads
                b.position(b.position() + n);
                off += n;
            }
            return java.util.Arrays.copyOf(b.array(), b.position());
        } finally {
            fs.release(fh);
        }
    }

    @Test
    void tensor_readsAsRawBytes_sidecar_andNpy() {
        putF32(store, "/j/w", 3, 4);
        assertEquals(List.of("w.meta", "w", "w.npy"), fs.readdir("/j"));
        assertArrayEquals(Fixtures.iota32(12), readWhole("/j/w"));
        assertEquals("f32\n2\n3\n4\n", new String(readWhole("/j/w.meta"), StandardCharsets.US_ASCII));
        byte[] npy = readWhole("/j/w.npy");
        assertEquals(128 + 48, npy.length);
        assertEquals("\u0093NUMPY", new String(npy, 0, 6, StandardCharsets.ISO_8859_1));
        assertArrayEquals(Fixtures.iota32(12), java.util.Arrays.copyOfRange(npy, 128, npy.length));
        assertEquals(FsLogic.EACCES, errno(() -> fs.open("/j/w", true, false)));
        assertEquals(FsLogic.EACCES, errno(() -> fs.unlink("/j/w.meta")));
    }

    @Test
    void files_randomWrites_publishOnLastClose() {
        fs.mkdir("/d");
        long a = fs.create("/d/f");
        assertTrue(store.stat(StorePath.parse("/d/f")).isPresent()); // visible at once, empty
        fs.write(a, 4, ByteBuffer.wrap("tail".getBytes(StandardCharsets.US_ASCII)));
        long b = fs.open("/d/f", true, false);
        fs.write(b, 0, ByteBuffer.wrap("head".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(0, fs.getattr("/d/f").size()); // not published yet: readers see the closed version
        assertEquals(0, readWhole("/d/f").length);
        fs.release(a);
        assertEquals(0, store.stat(StorePath.parse("/d/f")).orElseThrow().size());
        fs.release(b);
        assertEquals("headtail", new String(readAll(store, "/d/f"), StandardCharsets.US_ASCII));
        fs.truncate("/d/f", 4);
        assertEquals("head", new String(readAll(store, "/d/f"), StandardCharsets.US_ASCII));
        fs.rename("/d/f", "/d/g");
        assertEquals(List.of("g"), fs.readdir("/d"));
        assertEquals(FsLogic.ENOTEMPTY, errno(() -> fs.rmdir("/d")));
        assertEquals(FsLogic.EEXIST, errno(() -> fs.mkdir("/d")));
        assertEquals(FsLogic.EISDIR, errno(() -> fs.unlink("/d")));
        assertEquals(FsLogic.ENOTDIR, errno(() -> fs.rmdir("/d/g")));
        fs.unlink("/d/g");
        fs.rmdir("/d");
        assertEquals(FsLogic.ENOENT, errno(() -> fs.getattr("/d")));
        assertEquals(FsLogic.ENOENT, errno(() -> fs.open("/nope", false, false)));
    }

    @Test
    void npyFile_becomesATensor_otherBytesStayAFile() {
        byte[] header = io.tenplex.store.Npy.header(io.tenplex.ptc.TensorMeta.of(io.tenplex.ptc.DType.F32, 2, 2));
        long fh = fs.create("/x.npy");
        fs.write(fh, 0, ByteBuffer.wrap(header));
        fs.write(fh, header.length, ByteBuffer.wrap(Fixtures.iota32(4)));
        fs.release(fh);
        assertEquals("tensor", store.stat(StorePath.parse("/x")).orElseThrow().type().jsonName());
        assertTrue(store.stat(StorePath.parse("/x.npy")).isEmpty()); // only the virtual view remains
        assertArrayEquals(Fixtures.iota32(4), readAll(store, "/x"));
        long bad = fs.create("/y.npy");
        fs.write(bad, 0, ByteBuffer.wrap("not numpy".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(FsLogic.EINVAL, errno(() -> fs.flush(bad))); // close() reports it
        fs.release(bad);
        assertTrue(store.stat(StorePath.parse("/y.npy")).isEmpty(), "a refused .npy is not kept");
        long cut = fs.create("/z.npy"); // a valid header whose data is short
        fs.write(cut, 0, ByteBuffer.wrap(header));
        fs.write(cut, header.length, ByteBuffer.wrap(Fixtures.iota32(3)));
        assertEquals(FsLogic.EINVAL, errno(() -> fs.release(cut))); // without a flush the last release publishes
        assertTrue(store.stat(StorePath.parse("/z.npy")).isEmpty() && store.stat(StorePath.parse("/z")).isEmpty());
    }

    @Test
    void flush_ofTheOnlyHandle_publishes_andAFailureKeepsThePreviousContent() {
        long fh = fs.create("/f");
        fs.write(fh, 0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
        fs.flush(fh);
        assertArrayEquals(new byte[] {1, 2, 3}, readAll(store, "/f"));
        fs.release(fh);
        long big = fs.open("/f", true, true);
        fs.write(big, 0, ByteBuffer.allocate((1 << 20) + 1)); // over this store's 1 MiB budget
        assertEquals(FsLogic.ENOSPC, errno(() -> fs.flush(big)));
        fs.release(big);
        assertArrayEquals(new byte[] {1, 2, 3}, readAll(store, "/f"));
        assertEquals(3, store.allocator().usedBytes(), "nothing of the refused write stays allocated");
    }

    @Test
    void write_ofSizesThatAreNotPageMultiples_isStoredWhole() {
        try (TensorStore big = new TensorStore(new Allocator(64 << 20), 4096)) {
            FsLogic logic = new FsLogic(big);
            for (int size : new int[] {1_048_577, 4_000_000, (1 << 20) + 4095}) {
                byte[] data = new byte[size];
                new java.util.Random(size).nextBytes(data);
                long fh = logic.create("/f" + size);
                logic.write(fh, 0, ByteBuffer.wrap(data));
                logic.flush(fh);
                logic.release(fh);
                assertArrayEquals(data, readAll(big, "/f" + size));
            }
            assertEquals(0, logic.openHandles());
        }
    }

    @Test
    void overTheBudget_isENOSPC_andThePreviousContentStays() {
        Fixtures.putFile(store, "/f", new byte[] {1, 2}, false);
        long fh = fs.open("/f", true, true);
        fs.write(fh, 0, ByteBuffer.wrap(new byte[2 << 20]));
        assertEquals(FsLogic.ENOSPC, errno(() -> fs.release(fh)));
        assertArrayEquals(new byte[] {1, 2}, readAll(store, "/f"));
    }

    @Test
    void generations_areReadOnly() {
        putF32(store, "/job/j/generations/5/0/w", 2);
        assertEquals(FsLogic.EROFS, errno(() -> fs.create("/job/j/generations/5/0/x")));
        assertEquals(FsLogic.EROFS, errno(() -> fs.unlink("/job/j/generations/5/0/w")));
        assertEquals(FsLogic.EROFS, errno(() -> fs.rename("/job/j/generations/5", "/job/j/old")));
        assertEquals(FsLogic.EROFS, errno(() -> fs.mkdir("/job/j/generations/6")));
        assertTrue(!fs.getattr("/job/j/generations/5/0").writable());
        assertArrayEquals(Fixtures.iota32(2), readWhole("/job/j/generations/5/0/w"));
    }

    @Test
    void theFileNamingTheCurrentGeneration_isReadOnlyToo() {
        Fixtures.putFile(store, "/job/j/generation", "5".getBytes(java.nio.charset.StandardCharsets.US_ASCII), false);
        assertEquals(FsLogic.EROFS, errno(() -> fs.unlink("/job/j/generation")));
        assertEquals(FsLogic.EROFS, errno(() -> fs.rename("/job/j/generation", "/job/j/old")));
        assertTrue(!fs.getattr("/job/j/generation").writable());
        assertArrayEquals("5".getBytes(java.nio.charset.StandardCharsets.US_ASCII), readAll(store, "/job/j/generation"));
    }

    @Test
    void storeErrors_becomeErrnoByKind_notByMessage() {
        record Case(StoreException e, int errno) {}
        List<Case> cases = List.of(
                new Case(StoreException.exists("any text"), FsLogic.EEXIST),
                new Case(StoreException.notADirectory("any text"), FsLogic.ENOTDIR),
                new Case(StoreException.isADirectory("any text"), FsLogic.EISDIR),
                new Case(StoreException.notEmpty("any text"), FsLogic.ENOTEMPTY),
                new Case(StoreException.notFound("is a directory, not a directory"), FsLogic.ENOENT),
                new Case(StoreException.conflict("not a directory"), FsLogic.EEXIST),
                new Case(StoreException.wrongType(StoreException.Kind.NOT_FOUND, "x"), FsLogic.ENOENT),
                new Case(StoreException.wrongType(StoreException.Kind.CONFLICT, "x"), FsLogic.EACCES),
                new Case(StoreException.badRequest("x"), FsLogic.EINVAL),
                new Case(new StoreException(StoreException.Kind.TOO_LARGE, "x"), FsLogic.ENOSPC),
                new Case(new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE, "x"), FsLogic.ENOSPC),
                new Case(new StoreException(StoreException.Kind.FORBIDDEN, "x"), FsLogic.EACCES),
                new Case(new StoreException(StoreException.Kind.UNAVAILABLE, "x"), FsLogic.EIO),
                new Case(new StoreException(StoreException.Kind.BAD_GATEWAY, "x"), FsLogic.EIO),
                new Case(new StoreException(StoreException.Kind.GATEWAY_TIMEOUT, "x"), FsLogic.EIO));
        for (Case c : cases) {
            assertEquals(c.errno(), FsLogic.error(c.e()).errno(), c.e().code());
        }
    }

    @Test
    void storeRefusals_throughTheMount_carryTheirErrno() {
        Fixtures.putFile(store, "/f", new byte[] {1}, false);
        putF32(store, "/j/w", 2);
        fs.mkdir("/d");
        assertEquals(FsLogic.ENOTDIR, errno(() -> fs.mkdir("/f/x")));
        assertEquals(FsLogic.ENOTDIR, errno(() -> fs.readdir("/f")));
        assertEquals(FsLogic.ENOTDIR, errno(() -> fs.rename("/d", "/f/d")));
        assertEquals(FsLogic.EISDIR, errno(() -> fs.open("/d", false, false)));
        assertEquals(FsLogic.ENOTDIR, errno(() -> fs.release(fs.create("/f/y"))));
        long meta = fs.create("/j/x.meta");
        fs.write(meta, 0, ByteBuffer.wrap(new byte[] {1}));
        fs.release(meta);
        long npy = fs.create("/j/x.npy");
        byte[] header = Npy.header(io.tenplex.ptc.TensorMeta.of(io.tenplex.ptc.DType.F32, 1));
        fs.write(npy, 0, ByteBuffer.wrap(header));
        fs.write(npy, header.length, ByteBuffer.wrap(new byte[4]));
        assertEquals(FsLogic.EEXIST, errno(() -> fs.release(npy))); // x.meta is taken: x cannot be a tensor
    }
}
