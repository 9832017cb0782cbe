package io.tenplex.fuse;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.ViewNode;
import io.tenplex.store.Npy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The file system view of a {@link TensorStore}, without FUSE: every operation the mount needs,
 * with errors as {@link FsError} carrying an errno. Paths are the store's. Directories list in
 * creation order; a tensor {@code w} reads as its raw bytes, its {@code w.meta} sidecar and a
 * virtual {@code w.npy}. Plain files are writable: writes are buffered per file and published in
 * one step when its last writer closes, so readers (and {@code stat}) see whole closed versions only;
 * a written {@code x.npy} becomes the tensor {@code x} (one that is not valid NumPy fails its close
 * with EINVAL and is not kept). Saved generations are read-only (EROFS). Thread-safe.
 */
public final class FsLogic {
    public static final int ENOENT = 2;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EACCES = 13;
    public static final int EEXIST = 17;
    public static final int ENOTDIR = 20;
    public static final int EISDIR = 21;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int ENOTEMPTY = 39;

    private static final String NPY = Publisher.NPY;

    /** An error with the errno the kernel should see. */
    public static final class FsError extends RuntimeException {
        private final int errno;

        FsError(int errno, String message) {
            super(message, null, false, false);
            this.errno = errno;
        }

        public int errno() {
            return errno;
        }
    }

    /** What {@code stat} shows. */
    /** @param mtimeMillis when the entry was written (epoch milliseconds; the mount's start for views) */
    public record Attr(boolean dir, long size, boolean writable, int children, long mtimeMillis) {
        Attr(boolean dir, long size, boolean writable, int children) {
            this(dir, size, writable, children, STARTED);
        }
    }

    /** The time shown for entries that have none of their own (dataset views, generated .npy files). */
    private static final long STARTED = System.currentTimeMillis();

    private final TensorStore store;
    private final DatasetView views;
    private final OpenFiles handles = new OpenFiles();
    private final Publisher publisher;
    private final Writers writers;

    public FsLogic(TensorStore store) {
        this(store, null);
    }

    /** @param datasets the dataset mounts whose rank views appear under {@code /job/<job>/} (read-only), or null */
    public FsLogic(TensorStore store, DatasetService datasets) {
        this.store = store;
        this.views = new DatasetView(datasets);
        this.publisher = new Publisher(store);
        this.writers = new Writers(store, publisher, handles);
    }

    static StorePath path(String p) {
        try {
            return StorePath.parse(p);
        } catch (IllegalArgumentException | StoreException e) {
            throw new FsError(EINVAL, e.getMessage());
        }
    }

    /** Maps a store error to an errno by its kind (never by its message). */
    static FsError error(StoreException e) {
        return new FsError(errno(e.detail(), e.kind()), e.getMessage());
    }

    private static int errno(StoreException.Kind detail, StoreException.Kind general) {
        return switch (detail) {
            case EXISTS, CONFLICT -> EEXIST;
            case NOT_A_DIRECTORY -> ENOTDIR;
            case IS_A_DIRECTORY -> EISDIR;
            case NOT_EMPTY -> ENOTEMPTY;
            // an entry of another type than asked for: missing as what was asked for, or not writable as such
            case WRONG_TYPE -> general == StoreException.Kind.NOT_FOUND ? ENOENT : EACCES;
            case NOT_FOUND -> ENOENT;
            case BAD_REQUEST -> EINVAL;
            case TOO_LARGE, INSUFFICIENT_STORAGE -> ENOSPC;
            case FORBIDDEN -> EACCES;
            case UNAVAILABLE, BAD_GATEWAY, GATEWAY_TIMEOUT -> EIO;
        };
    }

    /** What is published at {@code p} (a file being written shows its last closed version). */
    public Attr getattr(String p) {
        StorePath sp = path(p);
        ViewNode v = views.lookup(sp.toString());
        if (v != null && !DatasetView.isJobDir(sp.toString())) {
            return v.isDir() ? new Attr(true, 0, false, v.children().size()) : new Attr(false, v.size(), false, 0);
        }
        var e = store.stat(sp);
        if (e.isPresent()) {
            Entry en = e.get();
            boolean ro = DatasetView.isGeneration(sp.toString());
            return switch (en.type()) {
                case DIR -> new Attr(true, 0, !ro, en.children(), written(en));
                case FILE -> new Attr(false, en.size(), !ro, 0, written(en));
                default -> new Attr(false, en.size(), false, 0, written(en)); // tensors and sidecars
            };
        }
        TensorMeta npy = npyTensor(sp);
        if (npy != null) {
            return new Attr(false, Npy.header(npy).length + npy.byteSize(), false, 0);
        }
        if (v != null || (views.mountedJobsUnder("/job") && sp.toString().equals("/job"))) {
            return new Attr(true, 0, true, 0); // a job directory that only its dataset view makes
        }
        throw new FsError(ENOENT, "no such entry: " + p);
    }

    private static long written(Entry e) {
        return e.writtenMillis() > 0 ? e.writtenMillis() : STARTED;
    }

    private static String normal(String p) {
        return path(p).toString();
    }

    /** The tensor a virtual {@code x.npy} shows, or null. */
    private TensorMeta npyTensor(StorePath sp) {
        String name = sp.name();
        if (!name.endsWith(NPY) || name.length() == NPY.length()) {
            return null;
        }
        var t = store.stat(sp.parent().child(name.substring(0, name.length() - NPY.length())));
        return t.isPresent() && t.get().type() == EntryType.TENSOR ? t.get().meta() : null;
    }

    /** Names in a directory in creation order: sidecars before their tensors, then each tensor's {@code .npy}. */
    public List<String> readdir(String p) {
        String n = normal(p);
        ViewNode v = views.lookup(n);
        if (v != null && !v.isDir()) {
            throw new FsError(ENOTDIR, n + " is not a directory");
        }
        List<String> out = new ArrayList<>();
        try {
            for (Entry e : store.list(path(n), true)) {
                out.add(e.name());
                if (e.type() == EntryType.TENSOR && store.stat(e.path().parent().child(e.name() + NPY)).isEmpty()) {
                    out.add(e.name() + NPY);
                }
            }
        } catch (StoreException e) {
            if (e.kind() != StoreException.Kind.NOT_FOUND || (v == null && !views.mountedJobsUnder(n))) {
                throw error(e);
            }
        }
        for (String name : views.extraNames(n, v)) {
            if (!out.contains(name)) {
                out.add(name);
            }
        }
        return out;
    }

    /** Opens a file; {@code write} opens it for writing ({@code truncate}: from empty). */
    public long open(String p, boolean write, boolean truncate) {
        String n = normal(p);
        if (write) {
            views.checkWritable(n);
            return writers.open(n, truncate, false);
        }
        StorePath sp = path(n);
        ViewNode v = views.lookup(n);
        if (v != null && !DatasetView.isJobDir(n)) {
            if (v.isDir()) {
                throw new FsError(EISDIR, n + " is a directory");
            }
            return handles.register(new OpenFiles.ViewReader(v));
        }
        try {
            return handles.register(new OpenFiles.Reader(store.open(sp), null)); // the last closed version
        } catch (StoreException e) {
            TensorMeta npy = e.kind() == StoreException.Kind.NOT_FOUND ? npyTensor(sp) : null;
            if (npy == null) {
                throw error(e);
            }
            StorePath tensor = sp.parent().child(sp.name().substring(0, sp.name().length() - NPY.length()));
            DataRef ref = store.openTensor(tensor);
            return handles.register(new OpenFiles.Reader(ref, Npy.header(ref.meta())));
        }
    }

    /** Creates (or truncates) a file and opens it for writing. */
    public long create(String p) {
        String n = normal(p);
        views.checkWritable(n);
        return writers.open(n, true, true);
    }

    /** Reads up to {@code dst.remaining()} bytes at {@code offset}; returns how many (0 at the end). */
    public int read(long fh, long offset, ByteBuffer dst) {
        return handles.get(fh).read(offset, dst);
    }

    public int write(long fh, long offset, ByteBuffer src) {
        WriteBuffer w = handles.writer(fh);
        int n = src.remaining();
        w.write(offset, src);
        return n;
    }

    public void truncate(String p, long size) {
        String n = normal(p);
        views.checkWritable(n);
        WriteBuffer w = writers.get(n);
        if (w != null) {
            w.truncate(size);
            return;
        }
        long fh = writers.open(n, size == 0, false);
        try {
            handles.writer(fh).truncate(size);
        } finally {
            release(fh);
        }
    }

    public void ftruncate(long fh, long size) {
        handles.writer(fh).truncate(size);
    }

    /**
     * Called at every {@code close} of a descriptor: when it is the file's only open handle, its bytes
     * are published now, so that a failure reaches the {@code close} call (the kernel ignores the
     * result of release). A {@code .npy} file becomes a tensor and must be valid NumPy (EINVAL);
     * over the memory budget the publish fails with ENOSPC. Either way the previous content stays
     * and a file this writer created is removed.
     */
    public void flush(long fh) {
        if (handles.get(fh) instanceof OpenFiles.WriteRef wr) {
            WriteBuffer w = wr.writer();
            synchronized (w) {
                if (w.opens == 1) {
                    publisher.publishIfDirty(w);
                }
            }
        }
    }

    /**
     * Closes a handle. When the last writer of a file closes, bytes not yet published by
     * {@link #flush} are published in one step, with the same rules.
     */
    public void release(long fh) {
        OpenFiles.Handle h = handles.remove(fh);
        if (h instanceof OpenFiles.Reader r) {
            r.ref().close();
            return;
        }
        if (h instanceof OpenFiles.WriteRef wr) {
            WriteBuffer w = wr.writer();
            if (writers.close(w)) {
                synchronized (w) {
                    publisher.publishIfDirty(w);
                }
            }
        }
    }

    public void mkdir(String p) {
        String n = normal(p);
        views.checkWritable(n);
        StorePath sp = path(n);
        if (store.stat(sp).isPresent() || writers.get(n) != null) {
            throw new FsError(EEXIST, n + " exists");
        }
        try {
            store.mkdirs(sp);
        } catch (StoreException e) {
            throw error(e);
        }
    }

    public void rmdir(String p) {
        String n = normal(p);
        views.checkWritable(n);
        StorePath sp = path(n);
        Entry e = store.stat(sp).orElseThrow(() -> new FsError(ENOENT, "no such directory: " + n));
        if (e.type() != EntryType.DIR) {
            throw new FsError(ENOTDIR, n + " is not a directory");
        }
        if (e.children() > 0) {
            throw new FsError(ENOTEMPTY, n + " is not empty");
        }
        delete(sp);
    }

    public void unlink(String p) {
        String n = normal(p);
        views.checkWritable(n);
        StorePath sp = path(n);
        Entry e = store.stat(sp).orElseThrow(() -> new FsError(npyTensor(sp) != null ? EACCES : ENOENT,
                "no such file: " + n));
        if (e.type() == EntryType.DIR) {
            throw new FsError(EISDIR, n + " is a directory");
        }
        if (e.type() == EntryType.SIDECAR) {
            throw new FsError(EACCES, n + " is a tensor's sidecar; remove the tensor");
        }
        delete(sp);
    }

    private void delete(StorePath sp) {
        try {
            store.delete(sp);
        } catch (StoreException e) {
            throw error(e);
        }
    }

    /** Renames in one step, replacing the target (an empty directory or a file). */
    public void rename(String from, String to) {
        String a = normal(from);
        String b = normal(to);
        views.checkWritable(a);
        views.checkWritable(b);
        StorePath src = path(a);
        StorePath dst = path(b);
        Entry e = store.stat(src).orElseThrow(() -> new FsError(ENOENT, "no such entry: " + a));
        if (e.type() == EntryType.SIDECAR) {
            throw new FsError(EACCES, a + " is a tensor's sidecar");
        }
        var target = store.stat(dst);
        if (target.isPresent() && target.get().type() == EntryType.DIR) {
            if (e.type() != EntryType.DIR) {
                throw new FsError(EISDIR, b + " is a directory");
            }
            if (target.get().children() > 0) {
                throw new FsError(ENOTEMPTY, b + " is not empty");
            }
        } else if (target.isPresent() && e.type() == EntryType.DIR) {
            throw new FsError(ENOTDIR, b + " is not a directory");
        }
        try {
            store.move(src, dst);
        } catch (StoreException x) {
            throw error(x);
        }
    }

    /** True when reads of {@code fh} must go to its end whatever size the kernel cached (see OpenFiles#readToEnd). */
    public boolean readToEnd(long fh) {
        return handles.readToEnd(fh);
    }

    /** Open handles (a test asserts none leak). */
    public int openHandles() {
        return handles.size();
    }
}
