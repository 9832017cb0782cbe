package io.tenplex.datasets.hdf5;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The open files of one kind of array source ({@link Hdf5Sources}, the NetCDF classic sources) and the
 * arrays opened from them: a file stays open (by its canonical path) until {@link #close()}, is opened
 * again by the next mount that names it after it changed on disk (its arrays are dropped then; the old
 * handle is kept for mounts still reading it), and nothing stays open for a file whose first array was
 * refused. Arrays are kept by canonical URL; {@link #reader} finds them by the URL an index has, without
 * a lock. Thread-safe.
 *
 * @param <F> an open file
 * @param <A> an array of one
 */
public final class OpenArrayFiles<F, A> implements AutoCloseable {
    /** Opens the file at {@code p} of {@code size} bytes; a refusal is an {@link IllegalArgumentException}. */
    public interface FileOpener<F> {
        F open(ArrayUrl u, Path p, long size);
    }

    /** Opens the array {@code u} names in {@code file} (of {@code size} bytes) under {@code key}, its canonical URL. */
    public interface ArrayOpener<F, A> {
        A open(ArrayUrl u, String key, F file, long size);
    }

    private record Opened<F>(F file, long size, long modified) {}

    private final Function<String, Path> resolve;
    private final FileOpener<F> files;
    private final ArrayOpener<F, A> opener;
    private final Consumer<F> closer;
    private final Consumer<A> dropped;
    private final Function<Path, Path> stamp;
    private final Map<Path, Opened<F>> open = new HashMap<>();
    private final Map<String, A> arrays = new HashMap<>(); // by canonical URL
    private final Map<String, Path> paths = new HashMap<>(); // each array's file
    private final List<F> retired = new ArrayList<>();
    private final Map<String, A> reading = new ConcurrentHashMap<>(); // by URL as the index has it: no lock

    /**
     * @param resolve the canonical path of an allowed local source, or a refusal
     * @param dropped told of an array whose file changed on disk (to drop what it cached)
     */
    public OpenArrayFiles(Function<String, Path> resolve, FileOpener<F> files, ArrayOpener<F, A> opener,
            Consumer<F> closer, Consumer<A> dropped) {
        this(resolve, files, opener, closer, dropped, Function.identity());
    }

    /**
     * @param stamp the file whose size and modification time tell that a source changed on disk: the
     *     source itself, or for a directory the file in it that every change rewrites (ADIOS2's
     *     {@code md.idx}, which grows by a record at every step); when it cannot be read, the source's own
     */
    public OpenArrayFiles(Function<String, Path> resolve, FileOpener<F> files, ArrayOpener<F, A> opener,
            Consumer<F> closer, Consumer<A> dropped, Function<Path, Path> stamp) {
        this.resolve = resolve;
        this.files = files;
        this.opener = opener;
        this.closer = closer;
        this.dropped = dropped;
        this.stamp = stamp;
    }

    /** The array at {@code url}; with {@code recheck}, its file is opened again first if it changed on disk. */
    public synchronized A open(String url, boolean recheck) {
        ArrayUrl u = ArrayUrl.parse(url);
        String key = u.toString();
        A a = arrays.get(key);
        if (a != null && !recheck) {
            return a;
        }
        Path p = resolve.apply(u.file());
        boolean had = open.containsKey(p);
        Opened<F> f = file(u, p); // drops the arrays of a file changed on disk
        a = arrays.get(key);
        if (a != null) {
            return a;
        }
        try {
            a = opener.open(u, key, f.file(), f.size());
        } catch (RuntimeException e) {
            if (!had) { // nothing stays open for a file that failed its first mount
                open.remove(p);
                closer.accept(f.file());
            }
            throw e;
        }
        arrays.put(key, a);
        paths.put(key, p);
        return a;
    }

    /** The array a loader reads, by the URL its index has (opened without a recheck when new). */
    public A reader(String url) throws IOException {
        A a = reading.get(url);
        if (a == null) {
            synchronized (this) { // opened and kept at once: a recheck in between would leave a stale one kept
                try {
                    a = open(url, false);
                } catch (RuntimeException e) {
                    throw new IOException(e.getMessage(), e);
                }
                reading.put(url, a);
            }
        }
        return a;
    }

    /** The open file at {@code p}, opened (again) if it is new or changed on disk. */
    private Opened<F> file(ArrayUrl u, Path p) {
        BasicFileAttributes at;
        try {
            at = Files.readAttributes(stamp.apply(p), BasicFileAttributes.class, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            try {
                at = Files.readAttributes(p, BasicFileAttributes.class); // the opener says what is missing
            } catch (IOException again) {
                throw new IllegalArgumentException(u.file() + " is not readable");
            }
        }
        Opened<F> f = open.get(p);
        if (f != null && f.size() == at.size() && f.modified() == at.lastModifiedTime().toMillis()) {
            return f;
        }
        if (f != null) {
            forget(p);
        }
        Opened<F> o = new Opened<>(files.open(u, p, at.size()), at.size(), at.lastModifiedTime().toMillis());
        open.put(p, o);
        return o;
    }

    private void forget(Path p) {
        Opened<F> f = open.remove(p);
        for (String key : List.copyOf(arrays.keySet())) {
            if (p.equals(paths.get(key))) {
                A gone = arrays.remove(key);
                dropped.accept(gone);
                reading.values().removeIf(x -> x == gone);
                paths.remove(key);
            }
        }
        retired.add(f.file()); // a mount may still read it; closed with the daemon
    }

    /** Files open now (for tests: a refused file leaves none open). */
    public synchronized int openFiles() {
        return open.size();
    }

    @Override
    public synchronized void close() {
        open.values().forEach(f -> closer.accept(f.file()));
        retired.forEach(closer);
        open.clear();
        retired.clear();
        arrays.clear();
        paths.clear();
        reading.clear();
    }
}
