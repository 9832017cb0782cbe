package io.tenplex.fuse;

import java.nio.ByteBuffer;
import java.util.Arrays;

/** The buffered contents of a file open for writing through the mount, shared by all its writers. */
final class WriteBuffer {
    /** The largest file the mount writes (a Java array). */
    static final int MAX_FILE = Integer.MAX_VALUE - 64;

    final String path;
    /** The file did not exist before this writer: a failed publish removes its placeholder. */
    final boolean created;
    byte[] data;
    long size;
    int opens;
    /** Written since the last publish. */
    boolean dirty;

    WriteBuffer(String path, byte[] data, boolean created) {
        this.path = path;
        this.data = data;
        this.size = data.length;
        this.created = created;
    }

    synchronized void write(long offset, ByteBuffer src) {
        long end = offset + src.remaining();
        if (end > MAX_FILE) {
            throw new FsLogic.FsError(FsLogic.EFBIG, path + ": files written through the mount are limited to 2 GiB");
        }
        ensure(end);
        src.get(data, (int) offset, src.remaining());
        size = Math.max(size, end);
        dirty = true;
    }

    synchronized void truncate(long length) {
        if (length > MAX_FILE) {
            throw new FsLogic.FsError(FsLogic.EFBIG, path + ": files written through the mount are limited to 2 GiB");
        }
        ensure(length);
        if (length < size) {
            Arrays.fill(data, (int) length, (int) Math.min(size, data.length), (byte) 0);
        }
        size = length;
        dirty = true;
    }

    private void ensure(long end) {
        if (end > data.length) {
            data = Arrays.copyOf(data, (int) Math.min(MAX_FILE, Math.max(end, data.length * 2L)));
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
