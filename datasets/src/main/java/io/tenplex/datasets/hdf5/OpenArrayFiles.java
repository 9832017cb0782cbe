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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The open files of one kind of array source ({@link Hdf5Sources}, the NetCDF classic sources) and the
 * arrays opened from them: a file stays open (by its canonical path) until {@link #close()} (or the end
 * of the last read under way then), is opened again by the next mount that
 * names it after it changed on disk (its arrays are dropped then; the old handle is closed once the
 * reads under way on it have ended), and nothing stays open for a file whose first array was refused.
 * Arrays are kept by canonical URL; {@link #read} finds them by the URL an index
 * has, without a lock. Thread-safe.
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

    /** Reads the array {@code a} (its file stays open meanwhile). */
    public interface ArrayRead<A, T> {
        T read(A a) throws IOException;
    }

    private record Opened<F>(Handle<F> handle, long size, long modified) {
        F file() {
            return handle.file;
        }
    }

    /** An array and the handle of its file, as a read finds them. */
    private record Use<F, A>(A array, Handle<F> handle) {}

    /**
     * An open file and the reads under way on it: once retired (its file changed on disk), it is closed
     * when the last of them ends, or at once when there is none; a read never starts on a closed one.
     */
    private static final class Handle<F> {
        final F file;
        private final Consumer<F> closer;
        /** Reads under way; -1 once closed. */
        private final AtomicInteger users = new AtomicInteger();
        private volatile boolean retired;

        Handle(F file, Consumer<F> closer) {
            this.file = file;
            this.closer = closer;
        }

        /** Whether a read may start (the file is not closed); then {@link #exit} follows. */
        boolean enter() {
            for (int u = users.get(); u >= 0; u = users.get()) {
                if (users.compareAndSet(u, u + 1)) {
                    return true;
                }
            }
            return false;
        }

        void exit() {
            if (users.decrementAndGet() == 0 && retired) {
                closeIfIdle();
            }
        }

        void retire() {
            retired = true;
            closeIfIdle();
        }

        /** Closes now, reads under way or not (nothing read the file yet: its first array was refused). */
        void close() {
            if (users.getAndSet(-1) >= 0) {
                closer.accept(file);
            }
        }

        private void closeIfIdle() {
            if (users.compareAndSet(0, -1)) {
                closer.accept(file);
            }
        }
    }

    private final Function<String, Path> resolve;
    private final FileOpener<F> files;
    private final ArrayOpener<F, A> opener;
    private final Consumer<F> closer;
    private final Consumer<A> dropped;
    private final Function<Path, Path> stamp;
    private final Map<Path, Opened<F>> open = new HashMap<>();
    private final Map<String, A> arrays = new HashMap<>(); // by canonical URL
    private final Map<String, Path> paths = new HashMap<>(); // each array's file
    /** Handles retired while reads were under way on them: each closed by its last read. */
    private final List<Handle<F>> retired = new ArrayList<>();
    private final Map<String, Use<F, A>> reading = new ConcurrentHashMap<>(); // by URL as the index has it: no lock

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
                f.handle().close();
            }
            throw e;
        }
        arrays.put(key, a);
        paths.put(key, p);
        return a;
    }

    /**
     * Reads the array a loader names by the URL its index has (opened without a recheck when new); its
     * file stays open until {@code read} returns, also when a recheck retires it meanwhile.
     */
    public <T> T read(String url, ArrayRead<A, T> read) throws IOException {
        while (true) {
            Use<F, A> u = use(url);
            if (!u.handle().enter()) {
                continue; // retired and closed since it was found: no longer listed, the file is opened again
            }
            try {
                return read.read(u.array());
            } finally {
                u.handle().exit();
            }
        }
    }

    private Use<F, A> use(String url) throws IOException {
        Use<F, A> u = reading.get(url);
        if (u != null) {
            return u;
        }
        synchronized (this) { // opened and kept at once: a recheck in between would leave a stale one kept
            try {
                A a = open(url, false);
                u = new Use<>(a, open.get(paths.get(ArrayUrl.parse(url).toString())).handle());
            } catch (RuntimeException e) {
                throw new IOException(e.getMessage(), e);
            }
            reading.put(url, u);
            return u;
        }
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
        Opened<F> o = new Opened<>(new Handle<>(files.open(u, p, at.size()), closer), at.size(),
                at.lastModifiedTime().toMillis());
        open.put(p, o);
        return o;
    }

    private void forget(Path p) {
        Opened<F> f = open.remove(p);
        for (String key : List.copyOf(arrays.keySet())) {
            if (p.equals(paths.get(key))) {
                A gone = arrays.remove(key);
                dropped.accept(gone);
                reading.values().removeIf(x -> x.array() == gone);
                paths.remove(key);
            }
        }
        // no new read finds it now; those under way keep it open until the last one ends
        retired.removeIf(h -> h.users.get() < 0);
        retired.add(f.handle());
        f.handle().retire();
    }

    /** Files open now (for tests: a refused file leaves none open), retired ones still read included. */
    public synchronized int openFiles() {
        return open.size() + (int) retired.stream().filter(h -> h.users.get() >= 0).count();
    }

    @Override
    public synchronized void close() {
        // retired, not closed under them: the reads under way end on an open file and the last one closes it
        // (as for those retired before); a read after this opens its file again, for the next close
        reading.clear();
        for (Opened<F> f : open.values()) {
            retired.add(f.handle());
            f.handle().retire();
        }
        retired.removeIf(h -> h.users.get() < 0); // those still read stay counted in openFiles until their last read
        open.clear();
        arrays.clear();
        paths.clear();
    }
}
