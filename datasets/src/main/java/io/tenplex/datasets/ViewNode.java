package io.tenplex.datasets;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One entry of a rank view: a directory (names in creation order), a small file held whole, or a
 * file made of shard buffers one after another (a shard file, or a rank's whole partition).
 */
public final class ViewNode {
    private final List<String> children;
    private final byte[] bytes;
    private final ShardBuffer[] parts;
    private final long[] starts;
    private final DatasetMount mount;

    private ViewNode(List<String> children, byte[] bytes, ShardBuffer[] parts, DatasetMount mount) {
        this.children = children;
        this.bytes = bytes;
        this.parts = parts;
        this.mount = mount;
        if (parts == null) {
            this.starts = null;
        } else {
            this.starts = new long[parts.length + 1];
            for (int i = 0; i < parts.length; i++) {
                starts[i + 1] = starts[i] + parts[i].size();
            }
        }
    }

    static ViewNode dir() {
        return new ViewNode(new ArrayList<>(), null, null, null);
    }

    static ViewNode file(byte[] bytes) {
        return new ViewNode(null, bytes, null, null);
    }

    static ViewNode data(DatasetMount mount, ShardBuffer... parts) {
        return new ViewNode(null, null, parts, mount);
    }

    public boolean isDir() {
        return children != null;
    }

    /** Names in this directory, in creation order. */
    public List<String> children() {
        return List.copyOf(children);
    }

    void add(String name) {
        children.add(name);
    }

    public long size() {
        return bytes != null ? bytes.length : parts != null ? starts[parts.length] : 0;
    }

    /**
     * Reads up to {@code dst.remaining()} bytes at {@code offset}, waiting for samples that are not
     * loaded yet; returns how many bytes were read (0 at the end).
     */
    public int read(long offset, ByteBuffer dst) throws InterruptedException {
        if (isDir()) {
            throw new IllegalStateException("a directory");
        }
        if (offset >= size() || !dst.hasRemaining()) {
            return 0;
        }
        int before = dst.position();
        if (bytes != null) {
            int n = (int) Math.min(dst.remaining(), bytes.length - offset);
            dst.put(bytes, (int) offset, n);
            return n;
        }
        int p = java.util.Arrays.binarySearch(starts, offset);
        p = p >= 0 ? p : -p - 2;
        long pos = offset;
        long waited = 0;
        for (; p < parts.length && dst.hasRemaining(); p++) {
            if (parts[p].size() == 0) {
                continue;
            }
            waited += parts[p].read(pos - starts[p], dst);
            pos = starts[p + 1];
        }
        mount.recordRead(waited);
        return dst.position() - before;
    }
}
