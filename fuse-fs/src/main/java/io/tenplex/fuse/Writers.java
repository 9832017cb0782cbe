package io.tenplex.fuse;

import io.tenplex.store.DataRef;
import io.tenplex.store.EntryType;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The files open for writing: one {@link WriteBuffer} per path, shared by all its descriptors, made
 * at the first open (from the file's bytes, or empty) and dropped when the last descriptor closes.
 */
final class Writers {
    private final TensorStore store;
    private final Publisher publisher;
    private final OpenFiles handles;
    private final Map<String, WriteBuffer> open = new ConcurrentHashMap<>();

    Writers(TensorStore store, Publisher publisher, OpenFiles handles) {
        this.store = store;
        this.publisher = publisher;
        this.handles = handles;
    }

    /** The writer of {@code n}, or null when it is not open for writing. */
    WriteBuffer get(String n) {
        return open.get(n);
    }

    /** Opens {@code n} for writing ({@code truncate}: from empty; {@code create}: may be new); a descriptor. */
    synchronized long open(String n, boolean truncate, boolean create) {
        WriteBuffer w = open.get(n);
        if (w == null) {
            StorePath sp = FsLogic.path(n);
            var e = store.stat(sp);
            if (e.isPresent() && e.get().type() == EntryType.DIR) {
                throw new FsLogic.FsError(FsLogic.EISDIR, n + " is a directory");
            }
            if (e.isPresent() && e.get().type() != EntryType.FILE) {
                throw new FsLogic.FsError(FsLogic.EACCES, n + " is a " + e.get().type().jsonName()
                        + " (read-only through the mount)");
            }
            if (e.isEmpty() && !create) {
                throw new FsLogic.FsError(FsLogic.ENOENT, "no such file: " + n);
            }
            byte[] initial = e.isPresent() && !truncate ? contents(n, sp) : new byte[0];
            if (e.isEmpty()) {
                publisher.publish(n, new byte[0], 0); // visible at once, as a newly created file is
            }
            w = new WriteBuffer(n, initial, e.isEmpty());
            open.put(n, w);
        } else if (truncate) {
            w.truncate(0);
        }
        synchronized (w) {
            w.opens++;
        }
        return handles.register(new OpenFiles.WriteRef(w));
    }

    /** The bytes of the file at {@code sp}, to be rewritten. */
    private byte[] contents(String n, StorePath sp) {
        try (DataRef ref = store.open(sp)) {
            if (ref.size() > WriteBuffer.MAX_FILE) {
                throw new FsLogic.FsError(FsLogic.EFBIG, n + " is too large to rewrite through the mount");
            }
            ByteBuffer b = ByteBuffer.allocate((int) ref.size());
            ref.copyTo(0, ref.size(), b);
            return b.array();
        }
    }

    /** Closes one descriptor of {@code w}; true when it was the last (the writer is then dropped). */
    synchronized boolean close(WriteBuffer w) {
        synchronized (w) {
            if (--w.opens > 0) {
                return false;
            }
            open.remove(w.path);
            return true;
        }
    }
}
