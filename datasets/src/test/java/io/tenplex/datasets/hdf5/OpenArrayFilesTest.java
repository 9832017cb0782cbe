package io.tenplex.datasets.hdf5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A source file that changes on disk is opened again, and its old handle is closed once no read is
 * under way on it: a daemon whose sources are rewritten and mounted again does not keep a descriptor
 * for each version. The files and arrays here are stand-ins that record their closing (the real
 * openers are exercised by the HDF5, NetCDF and ADIOS2 source tests).
 */
class OpenArrayFilesTest {
    @TempDir
    Path dir;
    private final List<FakeFile> closed = new CopyOnWriteArrayList<>();
    private final List<FakeFile> opened = new CopyOnWriteArrayList<>();
    private OpenArrayFiles<FakeFile, FakeArray> files;

    /** An open file: closing it twice, or reading it closed, is a failure the test sees. */
    static final class FakeFile {
        volatile boolean isClosed;
    }

    record FakeArray(FakeFile file) {
        String read() {
            return file.isClosed ? "read a closed file" : "read";
        }
    }

    private OpenArrayFiles<FakeFile, FakeArray> files() {
        return new OpenArrayFiles<>(Path::of, (u, p, size) -> {
                    FakeFile f = new FakeFile();
                    opened.add(f);
                    return f;
                }, (u, key, f, size) -> new FakeArray(f),
                f -> {
                    assertFalse(f.isClosed, "closed once");
                    f.isClosed = true;
                    closed.add(f);
                }, a -> { });
    }

    @AfterEach
    void close() {
        if (files != null) {
            files.close();
        }
    }

    @Test
    void aFileChangedOnDisk_andReadNoMore_isClosedWhenItsNewVersionOpens() throws Exception {
        files = files();
        String url = url(0);
        FakeArray first = files.open(url, true);
        assertEquals("read", files.read(url, FakeArray::read));
        for (int version = 1; version <= 50; version++) {
            FakeArray now = rewriteAndRecheck(url, version);
            assertNotSame(first, now);
            assertEquals(version, closed.size(), "every older version closed");
            assertEquals(1, files.openFiles());
            assertEquals("read", files.read(url, FakeArray::read));
            assertSame(now.file(), files.read(url, FakeArray::file), "reads go to the new version");
        }
        assertTrue(first.file().isClosed);
    }

    @Test
    void aFileChangedOnDisk_whileReadUnderWay_staysOpenUntilTheReadEnds() throws Exception {
        files = files();
        String url = url(0);
        FakeArray old = files.open(url, true);
        HeldRead read = readHeld(url, FakeArray::read);
        FakeArray now = rewriteAndRecheck(url, 1);
        assertFalse(old.file().isClosed, "a read is under way on the old version");
        assertEquals(2, files.openFiles());
        assertEquals("read", files.read(url, FakeArray::read), "a new read goes to the new version");
        assertSame(now.file(), files.read(url, FakeArray::file));
        read.go().complete(null);
        assertEquals("read", read.result().get(30, TimeUnit.SECONDS));
        assertTrue(old.file().isClosed, "closed by its last read");
        assertEquals(List.of(old.file()), closed);
        assertEquals(1, files.openFiles());
    }

    @Test
    void closingTheSources_closesEveryVersionOnce() throws Exception {
        files = files();
        String url = url(0);
        FakeArray old = files.open(url, true);
        HeldRead read = readHeld(url, a -> "done");
        FakeArray now = rewriteAndRecheck(url, 1);
        files.close();
        files = null;
        read.go().complete(null);
        assertEquals("done", read.result().get(30, TimeUnit.SECONDS)); // its end closes nothing twice
        assertEquals(2, closed.size());
        assertTrue(old.file().isClosed && now.file().isClosed);
    }

    @Test
    void aReadUnderWay_whenTheSourcesClose_readsAnOpenFile_andItsEndClosesIt() throws Exception {
        files = files();
        String url = url(0);
        FakeArray a = files.open(url, true);
        HeldRead read = readHeld(url, FakeArray::read);
        files.close();
        files = null;
        read.go().complete(null);
        assertEquals("read", read.result().get(30, TimeUnit.SECONDS), "the file was closed under the read");
        assertTrue(a.file().isClosed, "closed by its last read");
        assertEquals(List.of(a.file()), closed);
    }

    @Test
    void afterAClose_aReadOpensItsFileAgain_andTheNextCloseClosesIt() throws Exception {
        files = files();
        String url = url(0);
        assertEquals("read", files.read(url, FakeArray::read));
        files.close();
        assertEquals(0, files.openFiles());
        assertEquals(1, closed.size());
        assertEquals("read", files.read(url, FakeArray::read), "the sources serve again (tests close them between cases)");
        assertEquals(2, opened.size());
        assertEquals(1, files.openFiles());
        files.close();
        assertEquals(2, closed.size(), "what was opened after the first close is closed by the next");
        assertEquals(0, files.openFiles());
    }

    /** A read under way: it found its array and waits for {@code go} to complete, then answers {@code result}. */
    private record HeldRead(CompletableFuture<Void> go, CompletableFuture<String> result) {}

    private HeldRead readHeld(String url, java.util.function.Function<FakeArray, String> then) throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CompletableFuture<Void> go = new CompletableFuture<>();
        CompletableFuture<String> result = CompletableFuture.supplyAsync(() -> {
            try {
                return files.read(url, a -> {
                    reading.countDown();
                    go.join();
                    return then.apply(a);
                });
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        assertTrue(reading.await(30, TimeUnit.SECONDS), "the read started");
        return new HeldRead(go, result);
    }

    /** Writes version {@code v} of the file (one byte longer each time: a change its size shows) and rechecks it. */
    private FakeArray rewriteAndRecheck(String url, int v) throws Exception {
        Files.write(dir.resolve("a.h5"), new byte[v + 1]);
        return files.open(url, true);
    }

    private String url(int v) throws Exception {
        Files.write(dir.resolve("a.h5"), new byte[v + 1]);
        return "hdf5://" + dir.resolve("a.h5") + "#/x";
    }
}
