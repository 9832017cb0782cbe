package io.tenplex.store.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared-memory segments of one daemon, in a directory (a tmpfs such as {@code /dev/shm}), named
 * {@code tenplex-<pid>-<start>-<n>} after the daemon's process so that a restarted daemon can tell
 * orphans (their process is gone) from the segments of a daemon that runs. Segments count against the
 * {@link Allocator}'s budget from creation to deletion.
 *
 * <p>A freed segment is kept for reuse: the next save of a similar size takes it, so steady-state
 * saves touch no new pages. Kept segments are given back when the budget needs their bytes (the
 * allocator's reclaimer), when idle too long ({@link #trimIdle}), and at {@link #close()}.
 */
public final class SharedSegments implements AutoCloseable {
    static final Logger LOG = LoggerFactory.getLogger(SharedSegments.class);
    /** Segment sizes are rounded up to this, so that saves of nearly the same size share segments. */
    static final long GRAIN = 1 << 20;
    private static final Pattern NAME = Pattern.compile("tenplex-(\\d+)-(\\d+)-\\d+");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final Allocator allocator;
    private final String prefix;
    private final AtomicLong seq = new AtomicLong();
    private final List<Kept> kept = new ArrayList<>();
    private long live;
    private boolean closed;

    private record Kept(SharedSegment segment, long since) {
    }

    /** Segments in {@code dir}, within {@code allocator}'s budget; removes orphans found there. */
    public SharedSegments(Path dir, Allocator allocator) {
        this.dir = dir;
        this.allocator = allocator;
        this.prefix = "tenplex-" + ProcessHandle.current().pid() + "-" + ProcessStart.self() + "-";
        int removed = removeOrphans(dir);
        if (removed > 0) {
            LOG.info("removed {} orphaned shared-memory segments from {}", removed, dir);
        }
        allocator.addReclaimer(this::reclaim);
    }

    public Path dir() {
        return dir;
    }

    /**
     * A segment with room for {@code dataBytes} after its header, holding one reference for the
     * caller: a kept one of a fitting size (at most twice what is needed), else a new file.
     *
     * @throws OutOfBudgetException when the budget or the directory's free space cannot take it
     * @throws IOException when the file cannot be made
     */
    public SharedSegment acquire(long dataBytes) throws IOException {
        if (dataBytes < 0 || dataBytes > Long.MAX_VALUE / 4) {
            throw new IllegalArgumentException("cannot reserve " + dataBytes + " bytes of shared memory");
        }
        long capacity = (SharedSegment.HEADER + dataBytes + GRAIN - 1) / GRAIN * GRAIN;
        SharedSegment reused = takeKept(capacity);
        if (reused != null) {
            reused.writeHeader();
            return reused.retain();
        }
        allocator.reserveExternal(capacity);
        try {
            checkSpace(capacity);
            SharedSegment s = create(capacity);
            synchronized (this) {
                live++;
            }
            return s.retain();
        } catch (IOException | RuntimeException e) {
            allocator.releaseExternal(capacity);
            throw e;
        }
    }

    private synchronized SharedSegment takeKept(long capacity) {
        int best = -1;
        for (int i = 0; i < kept.size(); i++) {
            long c = kept.get(i).segment.capacity();
            if (c >= capacity && c <= 2 * capacity && (best < 0 || c < kept.get(best).segment.capacity())) {
                best = i;
            }
        }
        if (best < 0) {
            return null;
        }
        live++;
        return kept.remove(best).segment;
    }

    private void checkSpace(long capacity) throws IOException {
        long usable = Files.getFileStore(dir).getUsableSpace();
        if (usable < capacity) {
            throw new OutOfBudgetException("shared memory " + dir + " has " + usable + " bytes free, a save needs "
                    + capacity + " (enlarge it, e.g. docker --shm-size, or save over REST)", true);
        }
    }

    private SharedSegment create(long capacity) throws IOException {
        Path file = dir.resolve(prefix + seq.incrementAndGet());
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            try (var raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(capacity); // sparse: pages are allocated when first written
            }
            byte[] nonce = new byte[16];
            RANDOM.nextBytes(nonce);
            int window = allocator.chunkSize();
            return SharedSegment.map(this, file, HexFormat.of().formatHex(nonce), capacity, window);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /** The last reference of a segment is gone: keep it for reuse, or delete it after {@link #close()}. */
    void freed(SharedSegment s) {
        synchronized (this) {
            live--;
            if (!closed && !s.retired()) {
                kept.add(new Kept(s, System.nanoTime()));
                return;
            }
        }
        destroy(s);
    }

    private void destroy(SharedSegment s) {
        s.destroy();
        allocator.releaseExternal(s.capacity());
    }

    /** Deletes kept segments until {@code needed} bytes are free again (or none is kept); the bytes freed. */
    public long reclaim(long needed) {
        List<SharedSegment> drop = new ArrayList<>();
        long freed = 0;
        synchronized (this) {
            while (freed < needed && !kept.isEmpty()) {
                SharedSegment s = kept.remove(0).segment;
                drop.add(s);
                freed += s.capacity();
            }
        }
        drop.forEach(this::destroy);
        return freed;
    }

    /** Deletes segments kept unused for longer than {@code idleNanos}; how many. */
    public int trimIdle(long idleNanos) {
        List<SharedSegment> drop = new ArrayList<>();
        long now = System.nanoTime();
        synchronized (this) {
            kept.removeIf(k -> now - k.since > idleNanos && drop.add(k.segment));
        }
        drop.forEach(this::destroy);
        return drop.size();
    }

    /** Bytes of kept (unused) segments. */
    public synchronized long keptBytes() {
        return kept.stream().mapToLong(k -> k.segment.capacity()).sum();
    }

    /** Segments in use (reserved or holding blobs). */
    public synchronized long liveSegments() {
        return live;
    }

    /**
     * Deletes the files in {@code dir} that segments of a process that no longer runs left behind.
     *
     * @return how many were deleted
     */
    public static int removeOrphans(Path dir) {
        int removed = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "tenplex-*")) {
            for (Path f : files) {
                Matcher m = NAME.matcher(f.getFileName().toString());
                if (m.matches() && !ProcessStart.alive(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)))
                        && Files.deleteIfExists(f)) {
                    removed++;
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("cannot look for orphaned shared memory in {}: {}", dir, e.toString());
        }
        return removed;
    }

    /** Deletes kept segments; segments in use are deleted when their last reference goes. */
    @Override
    public void close() {
        List<Kept> drop;
        synchronized (this) {
            closed = true;
            drop = new ArrayList<>(kept);
            kept.clear();
        }
        drop.forEach(k -> destroy(k.segment));
    }

    static void unmap(ByteBuffer mapped) {
        OffHeapBacking.free(mapped);
    }
}
