package io.tenplex.fuse;

import io.tenplex.datasets.ViewNode;
import io.tenplex.store.DataRef;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** The handle table of a mount: what each open file descriptor reads or writes. */
final class OpenFiles {
    sealed interface Handle permits Reader, WriteRef, ViewReader {
        /** Reads up to {@code dst.remaining()} bytes at {@code offset}; returns how many (0 at the end). */
        int read(long offset, ByteBuffer dst);
    }

    /** An open file of a dataset view; reads wait for samples still loading. */
    record ViewReader(ViewNode node) implements Handle {
        @Override
        public int read(long offset, ByteBuffer dst) {
            try {
                return node.read(offset, dst); // waits for samples still loading
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new FsLogic.FsError(FsLogic.EIO, "interrupted");
            } catch (IllegalStateException e) {
                throw new FsLogic.FsError(FsLogic.EIO, e.getMessage()); // the mount was replaced or removed
            }
        }
    }

    /** An open file for reading: the bytes (a sidecar included), or a tensor seen as {@code .npy} after {@code prefix}. */
    record Reader(DataRef ref, byte[] prefix) implements Handle {
        @Override
        public int read(long offset, ByteBuffer dst) {
            int done = 0;
            long pos = offset;
            if (prefix != null && pos < prefix.length) {
                int n = (int) Math.min(dst.remaining(), prefix.length - pos);
                dst.put(prefix, (int) pos, n);
                done += n;
                pos += n;
            }
            long dataPos = pos - (prefix == null ? 0 : prefix.length);
            long n = Math.min(dst.remaining(), ref.size() - dataPos);
            if (n > 0) {
                ByteBuffer slice = dst.slice(dst.position(), (int) n);
                ref.copyTo(dataPos, n, slice);
                dst.position(dst.position() + (int) n);
                done += (int) n;
            }
            return done;
        }
    }

    /** A descriptor open for writing. */
    record WriteRef(WriteBuffer writer) implements Handle {
        @Override
        public int read(long offset, ByteBuffer dst) {
            return writer.read(offset, dst);
        }
    }

    private final Map<Long, Handle> handles = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    long register(Handle h) {
        long id = ids.incrementAndGet();
        handles.put(id, h);
        return id;
    }

    Handle get(long fh) {
        Handle h = handles.get(fh);
        if (h == null) {
            throw new FsLogic.FsError(FsLogic.EBADF, "no open file " + fh);
        }
        return h;
    }

    /** The writer of a descriptor open for writing (EBADF otherwise). */
    WriteBuffer writer(long fh) {
        if (!(get(fh) instanceof WriteRef wr)) {
            throw new FsLogic.FsError(FsLogic.EBADF, "file not open for writing");
        }
        return wr.writer();
    }

    /** Removes a handle; null when it was not open. */
    Handle remove(long fh) {
        return handles.remove(fh);
    }

    int size() {
        return handles.size();
    }

    /**
     * True when the kernel must read the handle to its end, ignoring the size it cached for the path: a
     * dataset view's file, or a store file (not a tensor), whose bytes are replaced under the same path
     * (a remount, a rewritten {@code model.json}). With the page cache the kernel cuts a read at the
     * size it last saw for up to its attribute timeout, so a reader right after a replacement got the
     * new bytes cut to the old length.
     */
    boolean readToEnd(long fh) {
        Handle h = get(fh);
        return h instanceof ViewReader || (h instanceof Reader r && r.prefix() == null && r.ref().meta() == null);
    }
}
