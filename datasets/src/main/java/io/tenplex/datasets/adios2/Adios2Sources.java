package io.tenplex.datasets.adios2;

import io.tenplex.datasets.hdf5.ArrayUrl;
import io.tenplex.datasets.hdf5.OpenArrayFiles;
import io.tenplex.ptc.data.DatasetIndex;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The ADIOS2 array sources of a daemon ({@code adios2:///<dir.bp>#<variable>}, where the directory is
 * a BP4 or BP5 file): opens such files where the operator allows local sources, checks a variable when
 * a mount names it (a bad file, name or an unsupported variable is an {@link IllegalArgumentException},
 * a 400, and nothing stays open for it), builds the index of its rows (all steps, in step order) and
 * reads byte ranges of them for the loaders. Files stay open until {@link #close()}; a directory
 * changed on disk since it was opened (as its {@code md.idx} shows: it grows at every step) is opened again by the next
 * mount. Thread-safe.
 */
public final class Adios2Sources implements AutoCloseable {
    /** An open directory: its data files and variables. */
    private record Opened(DataFiles data, Map<String, Adios2Variable> variables, int version) {}

    private final OpenArrayFiles<Opened, Adios2Array> files;

    /**
     * @param resolve the canonical path of an allowed local source, or a refusal (403) or an
     *     {@link IllegalArgumentException} (400)
     */
    public Adios2Sources(Function<String, Path> resolve) {
        this.files = new OpenArrayFiles<>(resolve, Adios2Sources::file, Adios2Sources::variable,
                f -> f.data().close(), a -> { }, dir -> dir.resolve("md.idx"));
    }

    /**
     * True if {@code url} is an {@code adios2:} URL (whether BP4 or BP5 is decided by its
     * {@code md.idx} when it is checked).
     *
     * @throws IllegalArgumentException for a malformed URL
     */
    public boolean claims(String url) {
        return url.startsWith("adios2:") && "adios2".equals(ArrayUrl.parse(url).kind());
    }

    /** Opens (again, if the directory changed) and checks the variable at {@code url}; its size in bytes. */
    public long check(String url) {
        return files.open(url, true).bytes();
    }

    /**
     * The index entry of every row of the variable at {@code url} (checked as {@link #check} does),
     * under its canonical URL.
     *
     * @param heap told the heap the entry takes before it is allocated (it may throw to refuse)
     */
    public DatasetIndex.File index(String url, LongConsumer heap) {
        Adios2Array a = files.open(url, true);
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

    /** The element type, global shape (of one step) and step count of the variable at {@code url}, checked. */
    public Description describe(String url) {
        Adios2Variable v = files.open(url, true).variable();
        return new Description(v.type(), v.shape().clone(), v.steps().size());
    }

    /**
     * What ADIOS2 reports of a served variable.
     *
     * @param type its element type
     * @param shape its global shape in each step
     * @param steps the steps it is in
     */
    public record Description(Adios2Type type, long[] shape, int steps) {}

    private static Adios2Array variable(ArrayUrl u, String key, Opened f, long size) {
        String name = u.dataset().substring(1);
        String what = "variable " + name + " of " + u.file() + " (ADIOS2 BP" + f.version() + ")";
        Adios2Variable v = f.variables().get(name);
        if (v == null) {
            throw new IllegalArgumentException(u.file() + " (ADIOS2 BP" + f.version() + ") has no variable '" + name
                    + "'; it has " + names(f.variables()));
        }
        return Adios2Array.open(key, what, v, f.data());
    }

    private static String names(Map<String, Adios2Variable> vars) {
        List<String> all = new ArrayList<>(vars.keySet());
        String shown = String.join(", ", all.subList(0, Math.min(all.size(), 10)));
        return all.isEmpty() ? "none" : shown + (all.size() > 10 ? " and " + (all.size() - 10) + " more" : "");
    }

    /** Opens the directory at {@code p} and reads its metadata (nothing stays open for a refused one). */
    private static Opened file(ArrayUrl u, Path p, long size) {
        String where = "ADIOS2 file " + u.file();
        if (!Files.isDirectory(p)) {
            throw new IllegalArgumentException(where + " is not a directory (BP4 and BP5 files are directories)");
        }
        MetaFiles.checkBudget(p, where, MetaFiles.budget(), "md.idx", "md.0", "mmd.0");
        MetaBytes idx = MetaFiles.read(p, "md.idx", where);
        int version = idx.u8(37, "the BP version (byte 37 of the header)");
        DataFiles data = new DataFiles(p, where);
        boolean opened = false;
        try {
            Map<String, Adios2Variable> vars = switch (version) {
                case 5 -> Bp5Metadata.read(idx, MetaFiles.read(p, "md.0", where), MetaFiles.read(p, "mmd.0", where), data);
                case 4 -> Bp4Metadata.read(idx, MetaFiles.read(p, "md.0", where), data);
                default -> throw idx.bad("the BP version is " + version + " (BP4 and BP5 are read)");
            };
            opened = true;
            return new Opened(data, vars, version);
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (RuntimeException e) { // a check missed: refuse the file rather than fail the daemon
            throw new IllegalArgumentException(where + ": malformed metadata (" + e + ")", e);
        } finally {
            if (!opened) { // refused, or an Error on the way: nothing stays open
                data.close();
            }
        }
    }

    /** The array at {@code url}, checked (for tests). */
    Adios2Array array(String url) {
        return files.open(url, true);
    }

    /** Directories open now (for tests: a refused one leaves none open). */
    int openFiles() {
        return files.openFiles();
    }

    @Override
    public void close() {
        files.close();
    }
}
