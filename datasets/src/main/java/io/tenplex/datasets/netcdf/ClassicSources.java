package io.tenplex.datasets.netcdf;

import io.tenplex.datasets.hdf5.OpenArrayFiles;
import io.tenplex.datasets.hdf5.ArrayUrl;
import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The NetCDF classic array sources of a daemon ({@code netcdf:///<file>#<variable>} where the file
 * is CDF-1, CDF-2 or CDF-5): opens such files where the operator allows local sources, checks a
 * variable when a mount names it (a bad file or name is an {@link IllegalArgumentException}, a 400,
 * and nothing stays open for it), builds the index of its rows and reads byte ranges of them for the
 * loaders. Files stay open until {@link #close()}; a file changed on disk since it was opened is
 * opened (and its header read) again by the next mount. Thread-safe.
 */
public final class ClassicSources implements AutoCloseable {
    /** An open classic file and its header. */
    private record Opened(FileChannel channel, CdfHeader header) {}

    private final Function<String, Path> resolve;
    private final OpenArrayFiles<Opened, ClassicArray> files;

    /**
     * @param resolve the canonical path of an allowed local source, or a refusal (403) or an
     *     {@link IllegalArgumentException} (400)
     */
    public ClassicSources(Function<String, Path> resolve) {
        this.resolve = resolve;
        this.files = new OpenArrayFiles<>(resolve, ClassicSources::file, ClassicSources::variable,
                f -> closeQuietly(f.channel()), a -> { });
    }

    /**
     * True if {@code url} is a {@code netcdf:} URL whose file begins with the classic signature
     * {@code CDF} (whatever its version byte: an unknown one is refused by {@link #check}).
     *
     * @throws IllegalArgumentException for a malformed URL or an unreadable file, or the refusal of
     *     the resolver (a file outside the data roots)
     */
    public boolean claims(String url) {
        ArrayUrl u = ArrayUrl.parse(url);
        if (!"netcdf".equals(u.kind())) {
            return false;
        }
        byte[] head = new byte[3];
        try (InputStream in = Files.newInputStream(resolve.apply(u.file()))) {
            return in.readNBytes(head, 0, 3) == 3 && head[0] == 'C' && head[1] == 'D' && head[2] == 'F';
        } catch (IOException e) {
            throw new IllegalArgumentException(u.file() + " is not readable");
        }
    }

    /** Opens (again, if the file changed) and checks the variable at {@code url}; its size in bytes. */
    public long check(String url) {
        return open(url, true).bytes();
    }

    /**
     * The index entry of every row of the variable at {@code url} (checked as {@link #check} does),
     * under its canonical URL.
     *
     * @param heap told the heap the entry takes before it is allocated (it may throw to refuse)
     */
    public DatasetIndex.File index(String url, LongConsumer heap) {
        ClassicArray a = open(url, true);
        int rows = (int) a.rows();
        heap.accept(16L * rows + 256);
        return DatasetIndex.File.ofRows(a.url, rows, a.rowBytes());
    }

    /** Fills {@code dst} (exactly its remaining bytes) with the variable's bytes from {@code begin}. */
    public void read(String url, long begin, ByteBuffer dst) throws IOException {
        files.read(url, a -> {
            a.read(begin, dst);
            return null;
        });
    }

    private ClassicArray open(String url, boolean recheck) {
        return files.open(url, recheck);
    }

    private static ClassicArray variable(ArrayUrl u, String key, Opened f, long size) {
        String name = u.dataset().substring(1);
        String what = "variable " + name + " of " + u.file();
        CdfVariable v = f.header().variables.get(name);
        if (v == null) {
            throw new IllegalArgumentException(u.file() + " (NetCDF classic, CDF-" + f.header().version
                    + ") has no variable '" + name + "'; it has " + names(f.header()));
        }
        return ClassicArray.open(key, what, f.header(), v, f.channel(), size);
    }

    private static String names(CdfHeader h) {
        List<String> all = new ArrayList<>(h.variables.keySet());
        String shown = String.join(", ", all.subList(0, Math.min(all.size(), 10)));
        return all.isEmpty() ? "none" : shown + (all.size() > 10 ? " and " + (all.size() - 10) + " more" : "");
    }

    /** Opens the file at {@code p} and reads its header (nothing stays open for a refused one). */
    private static Opened file(ArrayUrl u, Path p, long size) {
        FileChannel ch;
        try {
            ch = FileChannel.open(p, StandardOpenOption.READ);
        } catch (IOException e) {
            throw new IllegalArgumentException(u.file() + " is not readable");
        }
        try {
            return new Opened(ch, CdfHeader.read(ch, size, u.file()));
        } catch (RuntimeException e) {
            closeQuietly(ch);
            if (e instanceof UncheckedIOException io) {
                throw new IllegalArgumentException(u.file() + " is not readable (" + io.getCause() + ")");
            }
            throw e;
        }
    }

    /** Files open now (for tests: a refused file leaves none open). */
    int openFiles() {
        return files.openFiles();
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // opened for reading: nothing to flush
        }
    }

    @Override
    public void close() {
        files.close();
    }
}
