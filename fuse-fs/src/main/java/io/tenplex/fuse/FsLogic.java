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
import io.tenplex.store.memory.BlobWriter;
import io.tenplex.store.memory.OutOfBudgetException;
import io.tenplex.store.Npy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

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

    private static final String NPY = ".npy";
    private static final Pattern READ_ONLY = Pattern.compile("^/job/[^/]+/generations(/.*)?$");
    private static final Pattern JOB_DIR = Pattern.compile("^/job(/[^/]+)?$|^/$");
    private static final int MAX_FILE = Integer.MAX_VALUE - 64;

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
    public record Attr(boolean dir, long size, boolean writable, int children) {}

    private final TensorStore store;
    private final DatasetService datasets; // null: no dataset views
    private final Map<Long, Handle> handles = new ConcurrentHashMap<>();
    private final Map<String, Writer> writers = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    public FsLogic(TensorStore store) {
        this(store, null);
    }

    /** @param datasets the dataset mounts whose rank views appear under {@code /job/<job>/} (read-only), or null */
    public FsLogic(TensorStore store, DatasetService datasets) {
        this.store = store;
        this.datasets = datasets;
    }

    private sealed interface Handle permits Reader, WriteRef, ViewReader {}

    /** An open file of a dataset view; reads wait for samples still loading. */
    private record ViewReader(ViewNode node) implements Handle {}

    /** An open file for reading: the bytes (a sidecar included) or a tensor seen as {@code .npy}. */
    private record Reader(DataRef ref, byte[] prefix) implements Handle {}

    private record WriteRef(Writer writer) implements Handle {}

    /** The buffered contents of a file open for writing, shared by all its writers. */
    private static final class Writer {
        final String path;
        /** The file did not exist before this writer: a failed publish removes its placeholder. */
        final boolean created;
        byte[] data;
        long size;
        int opens;
        /** Written since the last publish. */
        boolean dirty;

        Writer(String path, byte[] data, boolean created) {
            this.path = path;
            this.data = data;
            this.size = data.length;
            this.created = created;
        }

        synchronized void write(long offset, ByteBuffer src) {
            long end = offset + src.remaining();
            if (end > MAX_FILE) {
                throw new FsError(EFBIG, path + ": files written through the mount are limited to 2 GiB");
            }
            ensure(end);
            src.get(data, (int) offset, src.remaining());
            size = Math.max(size, end);
            dirty = true;
        }

        synchronized void truncate(long length) {
            if (length > MAX_FILE) {
                throw new FsError(EFBIG, path + ": files written through the mount are limited to 2 GiB");
            }
            ensure(length);
            if (length < size) {
                java.util.Arrays.fill(data, (int) length, (int) Math.min(size, data.length), (byte) 0);
            }
            size = length;
            dirty = true;
        }

        private void ensure(long end) {
            if (end > data.length) {
                data = java.util.Arrays.copyOf(data, (int) Math.min(MAX_FILE, Math.max(end, data.length * 2L)));
            }
        }

        synchronized int read(long offset, ByteBuffer dst) {
            if (offset >= size) {
                return 0;
            }
            int n = (int) Math.min(dst.remaining(), size - offset);
            dst.put(data, (int) offset, n);
            return n;
        }
    }

    private static StorePath path(String p) {
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

    private void writable(String p) {
        if (READ_ONLY.matcher(p).matches()) {
            throw new FsError(EROFS, p + " is a saved generation (read-only)");
        }
        if (datasets != null && !JOB_DIR.matcher(p).matches()) {
            StorePath sp = path(p);
            if (datasets.isViewPath(p) || (!sp.isRoot() && datasets.isViewPath(sp.parent().toString()))) {
                throw new FsError(EROFS, p + " is in a dataset view (read-only)");
            }
        }
    }

    /** The dataset view entry at {@code p}, or null. */
    private ViewNode view(String p) {
        return datasets == null ? null : datasets.lookup(p).orElse(null);
    }

    /** What is published at {@code p} (a file being written shows its last closed version). */
    public Attr getattr(String p) {
        StorePath sp = path(p);
        ViewNode v = view(sp.toString());
        if (v != null && !JOB_DIR.matcher(sp.toString()).matches()) {
            return v.isDir() ? new Attr(true, 0, false, v.children().size()) : new Attr(false, v.size(), false, 0);
        }
        var e = store.stat(sp);
        if (e.isPresent()) {
            Entry en = e.get();
            boolean ro = READ_ONLY.matcher(sp.toString()).matches();
            return switch (en.type()) {
                case DIR -> new Attr(true, 0, !ro, en.children());
                case FILE -> new Attr(false, en.size(), !ro, 0);
                default -> new Attr(false, en.size(), false, 0); // tensors and sidecars
            };
        }
        TensorMeta npy = npyTensor(sp);
        if (npy != null) {
            return new Attr(false, Npy.header(npy).length + npy.byteSize(), false, 0);
        }
        if (v != null || (datasets != null && !datasets.jobs().isEmpty() && sp.toString().equals("/job"))) {
            return new Attr(true, 0, true, 0); // a job directory that only its dataset view makes
        }
        throw new FsError(ENOENT, "no such entry: " + p);
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
        ViewNode v = view(n);
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
            if (e.kind() != StoreException.Kind.NOT_FOUND || (v == null && !mountedJobsUnder(n))) {
                throw error(e);
            }
        }
        List<String> extra = v != null ? v.children()
                : n.equals("/job") && datasets != null ? datasets.jobs()
                : n.equals("/") && mountedJobsUnder("/") ? List.of("job") : List.of();
        for (String name : extra) {
            if (!out.contains(name)) {
                out.add(name);
            }
        }
        return out;
    }

    private boolean mountedJobsUnder(String dir) {
        return datasets != null && !datasets.jobs().isEmpty() && (dir.equals("/") || dir.equals("/job"));
    }

    /** Opens a file; {@code write} opens it for writing ({@code truncate}: from empty). */
    public long open(String p, boolean write, boolean truncate) {
        String n = normal(p);
        if (write) {
            writable(n);
            return writeHandle(n, truncate, false);
        }
        StorePath sp = path(n);
        ViewNode v = view(n);
        if (v != null && !JOB_DIR.matcher(n).matches()) {
            if (v.isDir()) {
                throw new FsError(EISDIR, n + " is a directory");
            }
            return register(new ViewReader(v));
        }
        try {
            return register(new Reader(store.open(sp), null)); // the last closed version, even while written
        } catch (StoreException e) {
            TensorMeta npy = e.kind() == StoreException.Kind.NOT_FOUND ? npyTensor(sp) : null;
            if (npy == null) {
                throw error(e);
            }
            StorePath tensor = sp.parent().child(sp.name().substring(0, sp.name().length() - NPY.length()));
            DataRef ref = store.openTensor(tensor);
            return register(new Reader(ref, Npy.header(ref.meta())));
        }
    }

    /** Creates (or truncates) a file and opens it for writing. */
    public long create(String p) {
        String n = normal(p);
        writable(n);
        return writeHandle(n, true, true);
    }

    private synchronized long writeHandle(String n, boolean truncate, boolean create) {
        Writer w = writers.get(n);
        if (w == null) {
            StorePath sp = path(n);
            var e = store.stat(sp);
            if (e.isPresent() && e.get().type() == EntryType.DIR) {
                throw new FsError(EISDIR, n + " is a directory");
            }
            if (e.isPresent() && e.get().type() != EntryType.FILE) {
                throw new FsError(EACCES, n + " is a " + e.get().type().jsonName() + " (read-only through the mount)");
            }
            if (e.isEmpty() && !create) {
                throw new FsError(ENOENT, "no such file: " + n);
            }
            byte[] initial = new byte[0];
            if (e.isPresent() && !truncate) {
                try (DataRef ref = store.open(sp)) {
                    if (ref.size() > MAX_FILE) {
                        throw new FsError(EFBIG, n + " is too large to rewrite through the mount");
                    }
                    ByteBuffer b = ByteBuffer.allocate((int) ref.size());
                    ref.copyTo(0, ref.size(), b);
                    initial = b.array();
                }
            }
            if (e.isEmpty()) {
                publish(n, new byte[0], 0); // visible at once, as a newly created file is
            }
            w = new Writer(n, initial, e.isEmpty());
            writers.put(n, w);
        } else if (truncate) {
            w.truncate(0);
        }
        return register(new WriteRef(attach(w)));
    }

    private static Writer attach(Writer w) {
        synchronized (w) {
            w.opens++;
        }
        return w;
    }

    private long register(Handle h) {
        long id = ids.incrementAndGet();
        handles.put(id, h);
        return id;
    }

    private Handle handle(long fh) {
        Handle h = handles.get(fh);
        if (h == null) {
            throw new FsError(EBADF, "no open file " + fh);
        }
        return h;
    }

    /** Reads up to {@code dst.remaining()} bytes at {@code offset}; returns how many (0 at the end). */
    public int read(long fh, long offset, ByteBuffer dst) {
        Handle h = handle(fh);
        if (h instanceof WriteRef wr) {
            return wr.writer().read(offset, dst);
        }
        if (h instanceof ViewReader vr) {
            try {
                return vr.node().read(offset, dst); // waits for samples still loading
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new FsError(EIO, "interrupted");
            } catch (IllegalStateException e) {
                throw new FsError(EIO, e.getMessage()); // the mount was replaced or removed
            }
        }
        Reader r = (Reader) h;
        int done = 0;
        long pos = offset;
        if (r.prefix() != null && pos < r.prefix().length) {
            int n = (int) Math.min(dst.remaining(), r.prefix().length - pos);
            dst.put(r.prefix(), (int) pos, n);
            done += n;
            pos += n;
        }
        long dataPos = pos - (r.prefix() == null ? 0 : r.prefix().length);
        long n = Math.min(dst.remaining(), r.ref().size() - dataPos);
        if (n > 0) {
            ByteBuffer slice = dst.slice(dst.position(), (int) n);
            r.ref().copyTo(dataPos, n, slice);
            dst.position(dst.position() + (int) n);
            done += (int) n;
        }
        return done;
    }

    public int write(long fh, long offset, ByteBuffer src) {
        Handle h = handle(fh);
        if (!(h instanceof WriteRef wr)) {
            throw new FsError(EBADF, "file not open for writing");
        }
        int n = src.remaining();
        wr.writer().write(offset, src);
        return n;
    }

    public void truncate(String p, long size) {
        String n = normal(p);
        writable(n);
        Writer w = writers.get(n);
        if (w != null) {
            w.truncate(size);
            return;
        }
        long fh = writeHandle(n, size == 0, false);
        try {
            ((WriteRef) handle(fh)).writer().truncate(size);
        } finally {
            release(fh);
        }
    }

    public void ftruncate(long fh, long size) {
        Handle h = handle(fh);
        if (!(h instanceof WriteRef wr)) {
            throw new FsError(EBADF, "file not open for writing");
        }
        wr.writer().truncate(size);
    }

    /**
     * Called at every {@code close} of a descriptor: when it is the file's only open handle, its bytes
     * are published now, so that a failure reaches the {@code close} call (the kernel ignores the
     * result of release). A {@code .npy} file becomes a tensor and must be valid NumPy (EINVAL);
     * over the memory budget the publish fails with ENOSPC. Either way the previous content stays
     * and a file this writer created is removed.
     */
    public void flush(long fh) {
        Handle h = handle(fh);
        if (h instanceof WriteRef wr) {
            Writer w = wr.writer();
            synchronized (w) {
                if (w.opens == 1) {
                    publishIfDirty(w);
                }
            }
        }
    }

    /**
     * Closes a handle. When the last writer of a file closes, bytes not yet published by
     * {@link #flush} are published in one step, with the same rules.
     */
    public void release(long fh) {
        Handle h = handles.remove(fh);
        if (h instanceof Reader r) {
            r.ref().close();
            return;
        }
        if (h instanceof WriteRef wr) {
            Writer w = wr.writer();
            synchronized (this) {
                synchronized (w) {
                    if (--w.opens > 0) {
                        return;
                    }
                    writers.remove(w.path);
                }
            }
            synchronized (w) {
                publishIfDirty(w);
            }
        }
    }

    private void publishIfDirty(Writer w) {
        if (!w.dirty) {
            return;
        }
        w.dirty = false;
        try {
            publish(w.path, w.data, w.size);
        } catch (FsError e) {
            if (w.created) {
                store.delete(path(w.path)); // the placeholder made at create
            }
            throw e;
        }
    }

    private void publish(String n, byte[] data, long size) {
        StorePath sp = path(n);
        try {
            if (n.endsWith(NPY) && size > 0) {
                Npy.Header header = validNpy(n, data, size);
                StorePath tensor = sp.parent().child(sp.name().substring(0, sp.name().length() - NPY.length()));
                try (BlobWriter bw = BlobWriter.allocate(store.allocator(), header.meta().byteSize(),
                        store.checksumBlock())) {
                    bw.append(ByteBuffer.wrap(data, header.dataOffset(), (int) header.meta().byteSize()));
                    store.putTensor(tensor, header.meta(), bw.take(), bw.checksums(), true);
                }
                store.delete(sp); // the placeholder made at create
                return;
            }
            try (BlobWriter bw = BlobWriter.allocate(store.allocator(), size, store.checksumBlock())) {
                bw.append(ByteBuffer.wrap(data, 0, (int) size));
                store.putFile(sp, bw.take(), bw.checksums(), true);
            }
        } catch (OutOfBudgetException e) {
            throw new FsError(ENOSPC, e.getMessage());
        } catch (StoreException e) {
            throw error(e);
        }
    }

    /** A {@code .npy} written through the mount must be a complete NumPy file of a supported dtype. */
    private static Npy.Header validNpy(String n, byte[] data, long size) {
        Npy.Header header;
        try {
            header = Npy.parse(data, (int) Math.min(size, 1 << 17));
        } catch (IllegalArgumentException e) {
            throw new FsError(EINVAL, n + " is not a NumPy file we can store: " + e.getMessage());
        }
        if (header == null || header.dataOffset() + header.meta().byteSize() != size) {
            throw new FsError(EINVAL, n + " is not a complete .npy file (" + size + " bytes"
                    + (header == null ? ", no complete header)" : "; " + header.meta() + " needs "
                    + (header.dataOffset() + header.meta().byteSize()) + ")"));
        }
        return header;
    }

    public void mkdir(String p) {
        String n = normal(p);
        writable(n);
        StorePath sp = path(n);
        if (store.stat(sp).isPresent() || writers.containsKey(n)) {
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
        writable(n);
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
        writable(n);
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
        writable(a);
        writable(b);
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

    /** Open handles (a test asserts none leak). */
    public int openHandles() {
        return handles.size();
    }
}
