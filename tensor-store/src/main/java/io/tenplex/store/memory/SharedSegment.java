package io.tenplex.store.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A sealed memory file ({@link MemFd}) that a client on this host maps to write tensors into, and
 * whose bytes then become blobs of the store without a copy. Clients open it as
 * {@code /proc/<daemon pid>/fd/<n>}, which only the daemon's user (and root) may do. Its size is fixed
 * and every page allocated before anyone maps it, and no process can shrink or grow it, so the
 * daemon's mapping can never fault: a client cannot crash the daemon through it. The first
 * {@link #HEADER} bytes hold a header naming the segment's nonce, so a client can check that the file
 * it mapped is the one the daemon meant; data starts after it.
 *
 * <p>A segment is reference counted: one reference for the reservation that fills it and one per
 * blob made of it. With the last one it goes back to its {@link SharedSegments}, which keeps it for
 * reuse (its pages stay touched, on both sides) or deletes it.
 */
public final class SharedSegment {
    /** Bytes before the data: {@code TENPLEX-SHM 1\n<nonce>\n}, zero-padded. */
    public static final int HEADER = 4096;
    private static final String MAGIC = "TENPLEX-SHM 1\n";

    /** Data of at least this many bytes starts on a page; smaller data on a 64-byte line. */
    private static final int PAGE = 4096;

    /** Where a blob's bytes lie: in {@code file} (of {@code capacity} bytes) at {@code offset}. */
    public record Location(Path file, String nonce, long capacity, long offset) {
    }

    private final SharedSegments owner;
    private final int fd;
    private final Path file;
    private final String nonce;
    private final long capacity;
    private final int window;
    private final FileChannel channel;
    private final MappedByteBuffer[] windows;
    private final AtomicInteger refs = new AtomicInteger();
    private volatile boolean retired;

    private SharedSegment(SharedSegments owner, int fd, String nonce, long capacity, int window,
            FileChannel channel, MappedByteBuffer[] windows) {
        this.owner = owner;
        this.fd = fd;
        this.file = Path.of("/proc/" + ProcessHandle.current().pid() + "/fd/" + fd);
        this.nonce = nonce;
        this.capacity = capacity;
        this.window = window;
        this.channel = channel;
        this.windows = windows;
    }

    /**
     * Maps the sealed memory file {@code fd} (owned by the segment from here on) in windows of
     * {@code window} bytes, after checking that it is {@code capacity} bytes and sealed against size
     * changes, and writes the header.
     */
    static SharedSegment map(SharedSegments owner, int fd, String nonce, long capacity, int window)
            throws IOException {
        FileChannel ch = null;
        int n = (int) ((capacity + window - 1) / window);
        MappedByteBuffer[] windows = new MappedByteBuffer[n];
        try {
            int seals = MemFd.seals(fd);
            if ((seals & MemFd.SEALS) != MemFd.SEALS) {
                throw new IOException("shared-memory segment fd " + fd + " has seals " + seals + ", needs " + MemFd.SEALS);
            }
            ch = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ, StandardOpenOption.WRITE);
            if (ch.size() != capacity) {
                throw new IOException("shared-memory segment fd " + fd + " has " + ch.size() + " bytes, not " + capacity);
            }
            for (int i = 0; i < n; i++) {
                long at = (long) i * window;
                windows[i] = ch.map(FileChannel.MapMode.READ_WRITE, at, Math.min(window, capacity - at));
            }
        } catch (IOException | RuntimeException e) {
            for (MappedByteBuffer w : windows) {
                if (w != null) {
                    SharedSegments.unmap(w);
                }
            }
            if (ch != null) {
                ch.close();
            }
            MemFd.close(fd);
            throw e;
        }
        SharedSegment s = new SharedSegment(owner, fd, nonce, capacity, window, ch, windows);
        s.writeHeader();
        return s;
    }

    /**
     * Where data of {@code size} bytes placed at or after {@code at} starts: on a page when it is at
     * least a page long, else on a 64-byte line (so that every tensor a client maps is aligned for its type).
     */
    public static long align(long at, long size) {
        long a = size >= PAGE ? PAGE : 64;
        return (at + a - 1) / a * a;
    }

    /** Touches every page of the data through the daemon's mapping (each is zero then, and stays so). */
    void touch() {
        for (MappedByteBuffer w : windows) {
            for (int at = 0; at < w.capacity(); at += PAGE) {
                w.put(at, w.get(at));
            }
        }
    }

    /** (Re)writes the header, so a segment a careless client wrote over is handed out intact. */
    void writeHeader() {
        byte[] h = (MAGIC + nonce + "\n").getBytes(StandardCharsets.US_ASCII);
        windows[0].put(0, h);
        windows[0].put(h.length, new byte[64 - h.length]);
    }

    /**
     * Marks the segment as not to be handed out again: a process that may still write into it (its
     * lease ran out while it ran) must not reach the next save's bytes. It is deleted when freed.
     */
    public void retire() {
        retired = true;
    }

    boolean retired() {
        return retired;
    }

    /** Where a client on this host opens the segment: {@code /proc/<daemon pid>/fd/<n>}. */
    public Path file() {
        return file;
    }

    public String nonce() {
        return nonce;
    }

    /** Bytes of the file, the header included. */
    public long capacity() {
        return capacity;
    }

    /** Adds a reference. */
    public SharedSegment retain() {
        refs.incrementAndGet();
        return this;
    }

    /** Gives a reference back; with the last one the segment returns to its owner. */
    public void release() {
        int r = refs.decrementAndGet();
        if (r == 0) {
            owner.freed(this);
        } else if (r < 0) {
            throw new IllegalStateException("shared segment " + file + " released more often than retained");
        }
    }

    int refCount() {
        return refs.get();
    }

    /**
     * The bytes {@code [offset, offset+size)} of the file as a blob of {@code allocator} (accounted by
     * the segment, not again by the blob); the blob holds a reference to the segment.
     */
    public Blob blob(Allocator allocator, long offset, long size) throws IOException {
        if (offset < HEADER || size < 0 || offset > capacity - size) {
            throw new IndexOutOfBoundsException("bytes " + offset + "+" + size + " outside the data of " + file);
        }
        int chunk = allocator.chunkSize();
        int n = (int) ((size + chunk - 1) / chunk);
        ByteBuffer[] chunks = new ByteBuffer[n];
        List<MappedByteBuffer> own = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                long at = offset + (long) i * chunk;
                chunks[i] = view(at, (int) Math.min(chunk, size - (long) i * chunk), own);
            }
        } catch (IOException | RuntimeException e) {
            own.forEach(SharedSegments::unmap);
            throw e;
        }
        retain();
        return allocator.wrap(new Slice(this, chunks, own, offset), size);
    }

    /**
     * Writable views of the data bytes {@code [offset, offset+size)}, split where the segment's
     * windows meet; valid while the caller holds a reference.
     */
    public List<ByteBuffer> views(long offset, long size) {
        if (offset < HEADER || size < 0 || offset > capacity - size) {
            throw new IndexOutOfBoundsException("bytes " + offset + "+" + size + " outside the data of " + file);
        }
        List<ByteBuffer> out = new ArrayList<>();
        long at = offset;
        long end = offset + size;
        while (at < end) {
            int w = (int) (at / window);
            int from = (int) (at - (long) w * window);
            int len = (int) Math.min(end - at, windows[w].capacity() - from);
            out.add(windows[w].slice(from, len));
            at += len;
        }
        return out;
    }

    /** A window's slice when the bytes lie in one window, else a mapping of their own. */
    private ByteBuffer view(long at, int len, List<MappedByteBuffer> own) throws IOException {
        int w = (int) (at / window);
        int from = (int) (at - (long) w * window);
        if (from + (long) len <= windows[w].capacity()) {
            return windows[w].slice(from, len);
        }
        MappedByteBuffer m = channel.map(FileChannel.MapMode.READ_WRITE, at, len);
        own.add(m);
        return m;
    }

    /** Unmaps and closes the memory file; the segment must be unreferenced. Its memory goes with the last mapping. */
    void destroy() {
        for (MappedByteBuffer w : windows) {
            SharedSegments.unmap(w);
        }
        try {
            channel.close();
        } catch (IOException e) {
            // the mapping is gone either way
        }
        MemFd.close(fd);
    }

    /** The memory of one blob in a segment. */
    static final class Slice implements BlobBacking.Memory {
        private final SharedSegment segment;
        private final ByteBuffer[] chunks;
        private final List<MappedByteBuffer> own;
        private final long offset;

        Slice(SharedSegment segment, ByteBuffer[] chunks, List<MappedByteBuffer> own, long offset) {
            this.segment = segment;
            this.chunks = chunks;
            this.own = own;
            this.offset = offset;
        }

        Location location() {
            return new Location(segment.file, segment.nonce, segment.capacity, offset);
        }

        @Override
        public ByteBuffer[] chunks() {
            return chunks;
        }

        @Override
        public void free() {
            own.forEach(SharedSegments::unmap);
            segment.release();
        }
    }
}
