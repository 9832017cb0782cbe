package io.tenplex.datasets.adios2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Seeded mutations of the committed BP4 and BP5 directories (each metadata file and {@code data.0}):
 * bit and byte flips, random bytes, 2-, 4- and 8-byte little-endian fields overwritten with boundary
 * values, truncations, and ranges duplicated over or into the file. For every variable of the file each
 * mutated copy is checked, described, indexed and read whole and in row-cutting pieces, in a daemon
 * thread with a time limit: only an {@link IllegalArgumentException} naming the directory (or an
 * {@link IOException} from a read) may escape, and once the sources are closed no file of the copy is
 * open. A mutation the reader cannot tell from a good file is fine. A failure names the engine, file,
 * case (its seed) and mutation, so that it reproduces.
 */
class Adios2FuzzTest {
    /** Cases per engine and file. */
    private static final int CASES = Integer.getInteger("adios2.fuzz.cases", 400);
    private static final long CASE_MILLIS = 10_000;
    /** The most bytes of a variable a case reads (a mutated shape may claim more). */
    private static final long READ_LIMIT = 4L << 20;
    private static final long[] LONGS = {0, 1, -1, 2, 7, 8, 64, 255, 256, 65535, Integer.MAX_VALUE, 1L << 31,
        (1L << 32) - 1, 1L << 32, 1L << 62, Long.MAX_VALUE, Long.MIN_VALUE, -2, -3, 1L << 40};
    private static final int[] INTS = {0, 1, -1, 2, 8, 255, 256, 0x7FFF, 0xFFFF, Integer.MAX_VALUE, Integer.MIN_VALUE};

    @TempDir
    Path dir;

    static Stream<Arguments> files() {
        return Stream.of(Arguments.of("bp5", "md.idx"), Arguments.of("bp5", "md.0"), Arguments.of("bp5", "mmd.0"),
                Arguments.of("bp5", "data.0"), Arguments.of("bp4", "md.idx"), Arguments.of("bp4", "md.0"),
                Arguments.of("bp4", "data.0"));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("files")
    void mutatedFiles_areServedOrRefused_withNothingElseEscaping(String engine, String file) throws Exception {
        Map<String, byte[]> original = read(Adios2Files.file(engine));
        List<String> vars = variables(engine);
        Map<String, String> failures = new LinkedHashMap<>(); // by exception and place: the first case
        for (int c = 0; c < CASES; c++) {
            long seed = ((long) engine.hashCode() * 31 + file.hashCode()) * 100_003 + c;
            Random rnd = new Random(seed);
            byte[] b = original.get(file).clone();
            StringBuilder how = new StringBuilder();
            byte[] mutated = mutate(b, rnd, how);
            Path copy = dir.resolve(engine + "-" + file + "-" + c + ".bp");
            write(copy, original, file, mutated);
            String label = engine + " " + file + " case " + c + " (seed " + seed + "): " + how;
            runCase(copy, vars, label, failures);
            delete(copy);
        }
        if (!failures.isEmpty()) {
            fail(failures.size() + " kinds of failure, the first case of each:\n" + String.join("\n\n", failures.values()));
        }
    }

    /** Runs every variable of {@code copy} in a daemon thread within the time limit; failures recorded by kind. */
    static void runCase(Path copy, List<String> vars, String label, Map<String, String> failures) throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicReference<String> doing = new AtomicReference<>("start");
        Thread t = new Thread(() -> {
            try {
                exercise(copy, vars, doing);
            } catch (Throwable e) { // what escaped: judged below
                thrown.set(e);
            }
        }, "adios2-fuzz");
        t.setDaemon(true);
        t.start();
        t.join(CASE_MILLIS);
        if (t.isAlive()) {
            failures.putIfAbsent("timeout", label + ": still running after " + CASE_MILLIS + " ms at " + doing.get());
            return;
        }
        Throwable e = thrown.get();
        if (e != null) {
            StackTraceElement top = e.getStackTrace().length > 0 ? e.getStackTrace()[0] : null;
            failures.putIfAbsent(e.getClass().getName() + " at " + top, label + " at " + doing.get() + ": "
                    + trace(e));
        }
    }

    /** check, describe, index and read every variable; then closes and checks that nothing is open. */
    private static void exercise(Path copy, List<String> vars, AtomicReference<String> doing) throws IOException {
        Adios2Sources sources = new Adios2Sources(Path::of);
        try {
            for (String v : vars) {
                String url = Adios2Files.url(copy, v);
                doing.set(v + " check");
                long bytes;
                try {
                    bytes = sources.check(url);
                } catch (IllegalArgumentException e) {
                    named(e, copy);
                    continue;
                }
                doing.set(v + " describe");
                sources.describe(url);
                doing.set(v + " index");
                try {
                    sources.index(url, n -> {
                        if (n > 64L << 20) {
                            throw new IllegalArgumentException(copy + ": index of " + n + " bytes refused");
                        }
                    });
                } catch (IllegalArgumentException e) {
                    named(e, copy);
                }
                doing.set(v + " read");
                read(sources, url, bytes, copy);
            }
        } finally {
            sources.close();
        }
        assertEquals(0, sources.openFiles());
        List<Path> open = Adios2Files.openUnder(copy);
        if (!open.isEmpty()) {
            throw new AssertionError("files left open: " + open);
        }
    }

    /** Reads the variable whole (up to the limit) and in pieces that cut rows. */
    private static void read(Adios2Sources sources, String url, long bytes, Path copy) {
        long n = Math.min(bytes, READ_LIMIT);
        try {
            sources.read(url, 0, ByteBuffer.allocate((int) n));
            if (bytes > 13) {
                sources.read(url, bytes - 13, ByteBuffer.allocate(13));
                for (long at = 3; at + 7 <= n; at += 61) {
                    sources.read(url, at, ByteBuffer.allocate(7));
                }
            }
        } catch (IllegalArgumentException e) {
            named(e, copy);
        } catch (IOException e) {
            if (e.getMessage() == null || !e.getMessage().contains(copy.toString()) && !e.getMessage().contains("ADIOS2")) {
                throw new AssertionError("an IOException that names neither the directory nor ADIOS2", e);
            }
        }
    }

    /**
     * Refuses a refusal that does not name the directory, or that is the last-resort wrap of another
     * exception (a check missed: the number should have been checked where it was read).
     */
    private static void named(IllegalArgumentException e, Path copy) {
        if (e.getMessage() == null || !e.getMessage().contains(copy.toString())) {
            throw new AssertionError("a refusal that does not name the directory", e);
        }
        if (e.getCause() instanceof RuntimeException r && !(r instanceof IllegalArgumentException)) {
            throw r;
        }
    }

    /** Applies one to three seeded mutations to {@code b}; {@code how} says which. */
    static byte[] mutate(byte[] b, Random rnd, StringBuilder how) {
        int n = 1 + (rnd.nextInt(4) == 0 ? rnd.nextInt(3) : 0);
        for (int i = 0; i < n && b.length > 0; i++) {
            b = mutateOnce(b, rnd, how);
        }
        return b;
    }

    private static byte[] mutateOnce(byte[] b, Random rnd, StringBuilder how) {
        int kind = rnd.nextInt(10);
        int at = rnd.nextInt(b.length);
        switch (kind) {
            case 0 -> {
                int bit = rnd.nextInt(8);
                b[at] ^= (byte) (1 << bit);
                how.append("bit ").append(bit).append(" of byte ").append(at).append(" flipped; ");
            }
            case 1 -> {
                int len = 1 + rnd.nextInt(8);
                for (int i = at; i < Math.min(b.length, at + len); i++) {
                    b[i] = (byte) rnd.nextInt(256);
                }
                how.append(len).append(" random bytes at ").append(at).append("; ");
            }
            case 2, 3, 4 -> {
                int p = kind == 2 ? at & ~7 : at;
                long v = LONGS[rnd.nextInt(LONGS.length)];
                put(b, p, v, 8);
                how.append("8 bytes at ").append(p).append(" = ").append(v).append("; ");
            }
            case 5 -> {
                int p = rnd.nextBoolean() ? at & ~3 : at;
                int v = INTS[rnd.nextInt(INTS.length)];
                put(b, p, v, rnd.nextBoolean() ? 4 : 2);
                how.append("4 or 2 bytes at ").append(p).append(" = ").append(v).append("; ");
            }
            case 6 -> {
                b = Arrays.copyOf(b, at);
                how.append("truncated to ").append(at).append("; ");
            }
            case 7, 8 -> {
                int len = 1 + rnd.nextInt(Math.min(256, b.length - at));
                int to = rnd.nextInt(b.length);
                if (kind == 7) {
                    System.arraycopy(b, at, b, to, Math.min(len, b.length - to));
                    how.append("bytes ").append(at).append("+").append(len).append(" copied over ").append(to);
                } else {
                    byte[] g = new byte[b.length + len];
                    System.arraycopy(b, 0, g, 0, to);
                    System.arraycopy(b, at, g, to, len);
                    System.arraycopy(b, to, g, to + len, b.length - to);
                    b = g;
                    how.append("bytes ").append(at).append("+").append(len).append(" inserted at ").append(to);
                }
                how.append("; ");
            }
            default -> {
                b[at] = (byte) (rnd.nextBoolean() ? 0 : 0xFF);
                how.append("byte ").append(at).append(" = ").append(b[at]).append("; ");
            }
        }
        return b;
    }

    private static void put(byte[] b, int p, long v, int n) {
        ByteBuffer x = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v);
        System.arraycopy(x.array(), 0, b, p, Math.min(n, b.length - p));
    }

    /** The variables of the engine's file: those served, those refused, and the other kinds it has. */
    static List<String> variables(String engine) {
        List<String> out = new ArrayList<>();
        Adios2Files.variables(engine).forEach(v -> out.add(v.name()));
        out.addAll(Adios2Files.REFUSED);
        out.addAll(List.of("local", "scalar", "text", "nosuch"));
        return out;
    }

    static Map<String, byte[]> read(Path from) throws IOException {
        Map<String, byte[]> out = new LinkedHashMap<>();
        try (Stream<Path> files = Files.list(from)) {
            for (Path p : files.toList()) {
                out.put(p.getFileName().toString(), Files.readAllBytes(p));
            }
        }
        return out;
    }

    static void write(Path to, Map<String, byte[]> files, String changed, byte[] bytes) throws IOException {
        Files.createDirectories(to);
        for (Map.Entry<String, byte[]> f : files.entrySet()) {
            Files.write(to.resolve(f.getKey()), f.getKey().equals(changed) ? bytes : f.getValue());
        }
    }

    private static void delete(Path d) throws IOException {
        try (Stream<Path> all = Files.walk(d)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private static String trace(Throwable e) {
        StringWriter s = new StringWriter();
        e.printStackTrace(new PrintWriter(s));
        String[] lines = s.toString().split("\n");
        return String.join("\n", Arrays.copyOf(lines, Math.min(lines.length, 14)));
    }
}
