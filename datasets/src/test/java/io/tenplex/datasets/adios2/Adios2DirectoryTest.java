package io.tenplex.datasets.adios2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a BP directory holds besides its format: a file of it that is a link (which could lead out of
 * the data root the directory was checked against) or a FIFO (which would block a reader) is refused
 * without being followed or opened; steps a writer appends (ADIOS2 appends a record to {@code md.idx}
 * at every step, which does not change the directory itself) are served by the next check.
 */
class Adios2DirectoryTest {
    @TempDir
    Path dir;
    private final Adios2Sources sources = new Adios2Sources(Path::of);

    @AfterEach
    void close() {
        sources.close();
    }

    private Path copyOf(String engine, String name) throws IOException {
        Path to = Files.createDirectories(dir.resolve(name + ".bp"));
        try (Stream<Path> files = Files.list(Adios2Files.file(engine))) {
            for (Path p : files.toList()) {
                Files.copy(p, to.resolve(p.getFileName().toString()));
            }
        }
        return to;
    }

    @Test
    void filesThatAreLinks_areRefused_notFollowed() throws IOException {
        Path secret = Files.write(dir.resolve("secret"), new byte[64 << 10]);
        for (String f : new String[] {"data.0", "md.0", "md.idx"}) {
            Path p = copyOf("bp5", "link-" + f.replace('.', '-'));
            Files.move(p.resolve(f), dir.resolve("moved-" + f.replace('.', '-')));
            Files.createSymbolicLink(p.resolve(f), dir.resolve("moved-" + f.replace('.', '-')));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> sources.check(Adios2Files.url(p, "i8")), f);
            assertTrue(e.getMessage().contains(p.toString()) && e.getMessage().contains(f)
                    && e.getMessage().contains("not a regular file"), e.getMessage());
        }
        Path toSecret = copyOf("bp5", "secret");
        Files.delete(toSecret.resolve("data.0"));
        Files.createSymbolicLink(toSecret.resolve("data.0"), secret);
        assertThrows(IllegalArgumentException.class, () -> sources.check(Adios2Files.url(toSecret, "i8")));
        assertEquals(0, sources.openFiles());
    }

    @Test
    void aFifo_isRefused_withoutBlocking() throws Exception {
        Path p = copyOf("bp5", "fifo");
        Files.delete(p.resolve("md.0"));
        Process mk = new ProcessBuilder("mkfifo", p.resolve("md.0").toString()).inheritIO().start();
        assertEquals(0, mk.waitFor());
        java.util.concurrent.CompletableFuture<Throwable> refused = new java.util.concurrent.CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                sources.check(Adios2Files.url(p, "i8"));
                refused.complete(null);
            } catch (Throwable e) {
                refused.complete(e);
            }
        }, "check-fifo");
        t.setDaemon(true);
        t.start();
        Throwable e;
        try {
            e = refused.get(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException blocked) { // a writer releases the reader, or the JVM would hang
            new ProcessBuilder("timeout", "5", "sh", "-c", "echo > " + p.resolve("md.0")).start().waitFor();
            throw new AssertionError("opening a FIFO blocked the check");
        }
        assertTrue(e instanceof IllegalArgumentException && e.getMessage().contains("md.0")
                && e.getMessage().contains("not a regular file"), String.valueOf(e));
    }

    /** Metadata files are read whole: a directory whose metadata exceed the budget is refused before any is read. */
    @Test
    void metadataOverTheBudget_isRefusedBeforeItIsRead() throws IOException {
        Path p = copyOf("bp5", "huge");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(p.resolve("md.0").toFile(), "rw")) {
            f.setLength(MetaFiles.budget() + 1); // sparse: no disk, but its size counts
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> sources.check(Adios2Files.url(p, "i8")));
        assertTrue(e.getMessage().contains(p.toString()) && e.getMessage().contains("md.idx, md.0, mmd.0 have")
                && e.getMessage().contains("over the " + MetaFiles.budget()), e.getMessage());
        assertEquals(0, sources.openFiles());
    }

    /** A BP5 directory whose md.idx lists its first two steps, then all three as the writer appends the third. */
    @Test
    void aStepAppended_isServedByTheNextCheck() throws IOException {
        Path p = copyOf("bp5", "growing");
        byte[] idx = Files.readAllBytes(p.resolve("md.idx"));
        Files.write(p.resolve("md.idx"), Arrays.copyOf(idx, endOfStep(idx, 2)));
        Adios2Files.Variable i8 = Adios2Files.variables("bp5").stream().filter(v -> v.name().equals("i8")).findFirst()
                .orElseThrow();
        String url = Adios2Files.url(p, "i8");
        assertEquals(i8.bytes().length / 3 * 2, sources.check(url), "two steps of 7 rows of 3 bytes");
        Files.write(p.resolve("md.idx"), idx, StandardOpenOption.TRUNCATE_EXISTING); // the same file, grown
        assertEquals(i8.bytes().length, sources.check(url), "the third step is served");
        ByteBuffer all = ByteBuffer.allocate(i8.bytes().length);
        sources.read(url, 0, all);
        assertArrayEquals(i8.bytes(), all.array());
    }

    /** The byte after the {@code n}-th step record ({@code 's'}) of a BP5 md.idx (records: id, 8-byte length, body). */
    private static int endOfStep(byte[] idx, int n) {
        ByteBuffer b = ByteBuffer.wrap(idx).order(ByteOrder.LITTLE_ENDIAN);
        int pos = Bp5Index.HEADER_BYTES;
        int steps = 0;
        while (pos < idx.length) {
            int id = idx[pos];
            int end = pos + 9 + (int) b.getLong(pos + 1);
            if (id == 's' && ++steps == n) {
                return end;
            }
            pos = end;
        }
        throw new AssertionError("md.idx has " + steps + " steps");
    }
}
