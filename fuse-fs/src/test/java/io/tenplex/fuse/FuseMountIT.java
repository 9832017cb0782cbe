package io.tenplex.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.store.Fixtures;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.Allocator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real FUSE mount of a store (root and /dev/fuse, as CI has), exercised with ordinary tools. */
class FuseMountIT {
    @TempDir
    Path tmp;
    private TensorStore store;
    private TenplexFuse fuse;
    private Path mnt;

    @BeforeEach
    void mount() throws Exception {
        store = new TensorStore(new Allocator(256L << 20));
        fuse = new TenplexFuse(store);
        mnt = tmp.resolve("mnt");
        fuse.mountAt(mnt);
    }

    @AfterEach
    void unmount() {
        fuse.close();
        assertEquals(0, fuse.logic().openHandles());
        store.close();
    }

    /** Runs a command; returns its output, failing with it when the exit status is not {@code want}. */
    static String sh(int want, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(want, p.waitFor(), String.join(" ", cmd) + ":\n" + out);
        return out;
    }

    /** A store file replaced through the store (a rewritten model.json) reads whole at once while another reader stats it. */
    @Test
    void aFileReplacedInTheStoreReadsWhole_whileAnotherReaderStatsIt() throws Exception {
        Path f = mnt.resolve("job/m/model.json");
        Fixtures.putFile(store, "/job/m/model.json", "{\"layers\": 8}".getBytes(StandardCharsets.UTF_8), true);
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        Thread stat = new Thread(() -> {
            while (!done.get()) {
                try {
                    Files.size(f);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        });
        stat.start();
        try {
            for (int i = 0; i < 200; i++) {
                String want = i % 2 == 0 ? "{\"layers\": 12}" : "{\"layers\": 8}";
                Fixtures.putFile(store, "/job/m/model.json", want.getBytes(StandardCharsets.UTF_8), true);
                assertEquals(want, Files.readString(f), "round " + i);
            }
        } finally {
            done.set(true);
            stat.join();
        }
    }

    @Test
    void realTools_copyCompareArchiveFind_andNumpy() throws Exception {
        Path src = tmp.resolve("src");
        Files.createDirectories(src.resolve("a/b"));
        Files.write(src.resolve("a/one.txt"), "one\n".getBytes(StandardCharsets.UTF_8));
        byte[] big = new byte[3 << 20];
        new java.util.Random(1).nextBytes(big);
        Files.write(src.resolve("a/b/big.bin"), big);
        sh(0, "cp", "-r", src.toString(), mnt.resolve("copy").toString());
        sh(0, "diff", "-r", src.toString(), mnt.resolve("copy").toString());
        assertArrayEquals(big, Fixtures.readAll(store, "/copy/a/b/big.bin"));
        sh(0, "tar", "cf", tmp.resolve("t.tar").toString(), "-C", mnt.toString(), "copy");
        assertTrue(sh(0, "tar", "tf", tmp.resolve("t.tar").toString()).contains("copy/a/b/big.bin"));
        assertEquals(List.of(mnt + "/copy/a/b/big.bin", mnt + "/copy/a/one.txt"), sh(0, "find", mnt.toString(), "-type",
                "f").lines().sorted().toList());
        // numpy writes a tensor through the mount and reads it back, and reads a tensor put over the API
        Fixtures.putF32(store, "/job/x/w", 3, 4);
        String py = "import numpy as np\n"
                + "w = np.load('" + mnt + "/job/x/w.npy'); assert w.shape == (3, 4) and w.dtype == np.float32, w\n"
                + "np.save('" + mnt + "/job/x/v.npy', (w * 2).astype(np.float64))\n"
                + "print(open('" + mnt + "/job/x/w.meta').read().split())\n";
        assertEquals("['f32', '2', '3', '4']", sh(0, "/usr/bin/python3", "-c", py).strip());
        var v = store.stat(StorePath.parse("/job/x/v")).orElseThrow();
        assertEquals("f64", v.meta().dtype().wireName());
        assertEquals(List.of("w.meta", "w", "w.npy", "v.meta", "v", "v.npy"), fuse.logic().readdir("/job/x"));
    }

    @Test
    void sizesThatAreNotPageMultiples_areStored_andBadNpyOrNoSpaceFailsTheClose() throws Exception {
        sh(0, "sh", "-c", "head -c 1048577 /dev/urandom > " + mnt.resolve("a"));
        assertEquals(1_048_577, Fixtures.readAll(store, "/a").length);
        assertEquals("1048577", sh(0, "stat", "-c", "%s", mnt.resolve("a").toString()).strip());
        long mtime = Long.parseLong(sh(0, "stat", "-c", "%Y", mnt.resolve("a").toString()).strip());
        assertTrue(Math.abs(mtime - System.currentTimeMillis() / 1000) < 300, "mtime is when it was written: " + mtime);
        String py = "import numpy as np, errno\n"
                + "np.save('" + mnt + "/e.npy', np.ones((1000, 1000), np.float32))\n"
                + "try:\n"
                + "    with open('" + mnt + "/bad.npy', 'wb') as f: f.write(b'not numpy at all')\n"
                + "except OSError as e: print(errno.errorcode[e.errno])\n";
        assertEquals("EINVAL", sh(0, "/usr/bin/python3", "-c", py).strip());
        assertTrue(store.stat(StorePath.parse("/e")).orElseThrow().meta().toString().contains("1000"));
        assertTrue(store.stat(StorePath.parse("/bad.npy")).isEmpty());
        // over the budget: close fails with ENOSPC, the earlier content stays, nothing stays allocated
        io.tenplex.store.memory.Blob hog = store.allocator().allocate(store.allocator().freeBytes() - (4 << 20));
        try {
            long used = store.allocator().usedBytes();
            String full = "import errno\n"
                    + "try:\n"
                    + "    with open('" + mnt + "/a', 'wb') as f: f.write(bytes(8 << 20))\n"
                    + "except OSError as e: print(errno.errorcode[e.errno])\n";
            assertEquals("ENOSPC", sh(0, "/usr/bin/python3", "-c", full).strip());
            assertEquals(1_048_577, Fixtures.readAll(store, "/a").length);
            assertEquals(used, store.allocator().usedBytes());
        } finally {
            hog.release();
        }
    }

    @Test
    void errorsAreProperErrnoValues() throws Exception {
        Files.createDirectories(mnt.resolve("d"));
        Files.write(mnt.resolve("d/f"), new byte[] {1});
        assertTrue(sh(1, "rmdir", mnt.resolve("d").toString()).contains("Directory not empty"));
        assertTrue(sh(1, "cat", mnt.resolve("nope").toString()).contains("No such file or directory"));
        assertTrue(sh(1, "mkdir", mnt.resolve("d").toString()).contains("File exists"));
        Fixtures.putF32(store, "/job/j/generations/3/0/w", 2);
        assertTrue(sh(1, "touch", mnt.resolve("job/j/generations/3/0/new").toString()).contains("Read-only file system"));
        assertTrue(sh(1, "rm", mnt.resolve("job/j/generations/3/0/w").toString()).contains("Read-only file system"));
        sh(0, "mv", mnt.resolve("d/f").toString(), mnt.resolve("d/g").toString()); // rename
        assertArrayEquals(new byte[] {1}, Fixtures.readAll(store, "/d/g"));
    }

    @Test
    void concurrentReaderAndWriter_neitherFails_andTheLastWriteWins() throws Exception {
        Path f = mnt.resolve("f");
        byte[] a = new byte[1 << 20];
        byte[] b = new byte[1 << 20];
        java.util.Arrays.fill(a, (byte) 'a');
        java.util.Arrays.fill(b, (byte) 'b');
        Files.write(f, a);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<?> writer = pool.submit(() -> {
                for (int i = 0; i < 40; i++) {
                    Files.write(f, i % 2 == 0 ? b : a);
                }
                return null;
            });
            Future<Integer> reader = pool.submit(() -> {
                int reads = 0;
                while (!writer.isDone()) {
                    byte[] got = Files.readAllBytes(f);
                    // as on any file system, a read during a rewrite may mix pages of the two versions
                    assertTrue(got.length <= 1 << 20, "length " + got.length);
                    for (byte x : got) {
                        assertTrue(x == 'a' || x == 'b', "byte " + x);
                    }
                    reads++;
                }
                return reads;
            });
            writer.get();
            assertTrue(reader.get() > 0);
            assertArrayEquals(a, Files.readAllBytes(f)); // the 40th write
            assertArrayEquals(a, Fixtures.readAll(store, "/f"));
        } finally {
            pool.shutdownNow();
        }
    }
}
