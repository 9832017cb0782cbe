package io.tenplex.store.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared-memory segments of one daemon: sealed memory files ({@link MemFd}) that clients on this
 * host open as {@code /proc/<daemon pid>/fd/<n>}. They have no name in any shared directory (no other
 * user can take or pre-create one), their memory goes with the daemon's process, and their size is
 * fixed and allocated at creation. A segment in use counts against the {@link Allocator}'s budget.
 *
 * <p>A freed segment is kept for reuse: the next save of a similar size takes it, so steady-state
 * saves touch no new pages. Kept segments are not counted as used: like the allocator's pooled
 * chunks, they are given back first whenever used plus kept memory would exceed the budget
 * ({@link Allocator.Keeper}), when idle too long ({@link #trimIdle}), and at {@link #close()}.
 *
 * <p>{@link #dir()} is where earlier versions made segments as files; {@link #removeOrphans} deletes
 * the files of such daemons that no longer run.
 */
public final class SharedSegments implements AutoCloseable, Allocator.Keeper {
    static final Logger LOG = LoggerFactory.getLogger(SharedSegments.class);
    /** Segment sizes are rounded up to this, so that saves of nearly the same size share segments. */
    static final long GRAIN = 1 << 20;
    /** A new segment of at least this many data bytes for a save is logged ({@link #acquire(long, String)}). */
    static final long NOTED_FRESH_BYTES = 64L << 20;
    private static final Pattern NAME = Pattern.compile("tenplex-(\\d+)-(\\d+)-\\d+");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final Allocator allocator;
    private final List<Kept> kept = new ArrayList<>();
    private long keptBytes;
    private long live;
    private boolean closed;

    private record Kept(SharedSegment segment, long since) {
    }

    /** Segments within {@code allocator}'s budget; removes orphaned segment files of earlier versions in {@code dir}. */
    public SharedSegments(Path dir, Allocator allocator) {
        this.dir = dir;
        this.allocator = allocator;
        int removed = removeOrphans(dir);
        if (removed > 0) {
            LOG.info("removed {} orphaned shared-memory segments from {}", removed, dir);
        }
        allocator.addKeeper(this);
    }

    /**
     * Whether a segment of {@code dataBytes} would leave at least {@code 1/share} of the budget free
     * (memory kept for reuse counts as free): for copies that are worth making only with room to spare.
     */
    public boolean roomToSpare(long dataBytes, int share) {
        long capacity = SharedSegment.HEADER + Math.max(0, dataBytes) + GRAIN;
        return allocator.freeBytes() - allocator.budget() / share >= capacity;
    }

    /** Null when segments can be made on this system, else why not. */
    public static String unavailable() {
        return MemFd.unavailable();
    }

    public Path dir() {
        return dir;
    }

    /**
     * A segment with room for {@code dataBytes} after its header, holding one reference for the
     * caller: a kept one of a fitting size (at most twice what is needed), else a new one.
     *
     * @throws OutOfBudgetException when the budget, or the system's memory, cannot take it now
     * @throws IOException when the segment cannot be made
     */
    public SharedSegment acquire(long dataBytes) throws IOException {
        return acquire(dataBytes, dataBytes).segment();
    }

    /**
     * As {@link #acquire(long)}, logging when {@code purpose} (a save, in words) gets a new segment of at
     * least {@link #NOTED_FRESH_BYTES}: its writes touch new memory, the slow path a kept segment avoids.
     */
    public SharedSegment acquire(long dataBytes, String purpose) throws IOException {
        long kept = keptBytes();
        Acquired a = acquire(dataBytes, dataBytes);
        if (!a.recycled() && dataBytes >= NOTED_FRESH_BYTES) {
            LOG.info("{} was slower than it could be: {} MB into a new shared-memory segment, touched for the first"
                    + " time (the daemon kept {} MB for reuse, none of a fitting size)", purpose,
                    dataBytes / 100_000 / 10.0, kept / 100_000 / 10.0);
        }
        return a.segment();
    }

    /** A segment and whether it was kept for reuse (its pages touched before) rather than made now. */
    public record Acquired(SharedSegment segment, boolean recycled) {
    }

    /**
     * A segment with room for at least {@code minData} and, where one is kept, for up to about
     * {@code wantData} data bytes: the kept one closest to {@code wantData} of those with room for
     * {@code minData} and at most twice {@code wantData}, else a new one for {@code wantData}. One
     * reference is the caller's.
     *
     * @throws OutOfBudgetException when the budget, or the system's memory, cannot take it now
     * @throws IOException when the segment cannot be made
     */
    public Acquired acquire(long minData, long wantData) throws IOException {
        if (minData < 0 || wantData < minData || wantData > Long.MAX_VALUE / 4) {
            throw new IllegalArgumentException("cannot reserve " + minData + " to " + wantData + " bytes of shared memory");
        }
        long want = capacity(wantData);
        SharedSegment reused = takeKept(capacity(minData), want);
        if (reused != null) {
            try {
                allocator.reserveExternal(reused.capacity());
            } catch (RuntimeException e) {
                notLive();
                reused.destroy(); // taken from the kept ones: no longer counted anywhere
                throw e;
            }
            reused.writeHeader();
            return new Acquired(reused.retain(), true);
        }
        return new Acquired(fresh(want), false);
    }

    /** A new segment of {@code capacity} bytes, counted as used, with one reference for the caller. */
    private SharedSegment fresh(long capacity) throws IOException {
        allocator.reserveExternal(capacity);
        try {
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

    /**
     * Makes a segment of {@code dataBytes} and touches its pages now, ahead of a move that will need
     * them, then keeps it for reuse (a move takes kept segments first: its writes then touch no new
     * memory). Nothing is made when a kept segment already fits or when it would leave less than a
     * quarter of the budget free.
     *
     * @return whether a segment was made
     */
    public boolean prewarm(long dataBytes) throws IOException {
        return prewarm(List.of(dataBytes)) > 0;
    }

    /**
     * As {@link #prewarm(long)} for several segments at once, one of each of {@code sizes} (data
     * bytes; the saves of a change's ranks and its move can each need one of the same size), in their
     * order: a size that a kept segment fits is matched by that segment, each kept one matching at most
     * one size; for the others a segment is made and touched while the memory neither used nor kept
     * for reuse (the allocator's pooled chunks included) keeps a quarter of the budget free after all
     * the segments made so far, so that making one never gives back a kept segment a size was matched
     * to. Sizes over {@code Long.MAX_VALUE / 4} are skipped.
     *
     * @return how many segments were made
     */
    public int prewarm(List<Long> sizes) throws IOException {
        List<Long> missing = new ArrayList<>();
        synchronized (this) {
            List<Long> free = new ArrayList<>(kept.stream().map(k -> k.segment.capacity()).sorted().toList());
            for (long size : sizes) {
                if (size <= 0 || size > Long.MAX_VALUE / 4) {
                    continue;
                }
                long want = capacity(size);
                int fit = -1;
                for (int i = 0; i < free.size() && fit < 0; i++) {
                    fit = free.get(i) >= want && free.get(i) <= 2 * want ? i : -1; // smallest first
                }
                if (fit >= 0) {
                    free.remove(fit);
                } else {
                    missing.add(size);
                }
            }
        }
        long room = allocator.freeBytes() - allocator.pooledBytes() - allocator.budget() / 4;
        int made = 0;
        for (long size : missing) {
            long c = capacity(size);
            if (c > room) {
                continue;
            }
            SharedSegment s = fresh(c); // not a kept one: each of those matched a size above
            room -= c;
            try {
                s.touch();
            } finally {
                s.release(); // kept, its pages touched
            }
            made++;
        }
        return made;
    }

    private static long capacity(long dataBytes) {
        return (SharedSegment.HEADER + dataBytes + GRAIN - 1) / GRAIN * GRAIN;
    }

    /** The kept segment of at least {@code min} and at most {@code 2 * want} bytes closest to {@code want}, or null. */
    private synchronized SharedSegment takeKept(long min, long want) {
        int best = -1;
        for (int i = 0; i < kept.size(); i++) {
            long c = kept.get(i).segment.capacity();
            if (c >= min && c <= 2 * want && (best < 0 || closer(c, kept.get(best).segment.capacity(), want))) {
                best = i;
            }
        }
        if (best < 0) {
            return null;
        }
        live++;
        SharedSegment s = kept.remove(best).segment;
        keptBytes -= s.capacity();
        return s;
    }

    /** Whether capacity {@code c} suits {@code want} better than {@code than}: the smallest with room, else the largest. */
    private static boolean closer(long c, long than, long want) {
        if ((c >= want) != (than >= want)) {
            return c >= want;
        }
        return c >= want ? c < than : c > than;
    }

    private synchronized void notLive() {
        live--;
    }

    /** A new segment; when the system has no room for it, kept segments are given back and it is tried once more. */
    private SharedSegment create(long capacity) throws IOException {
        int fd;
        try {
            fd = MemFd.create("tenplex-segment", capacity);
        } catch (OutOfBudgetException e) {
            if (giveBack(capacity) == 0) {
                throw e;
            }
            fd = MemFd.create("tenplex-segment", capacity);
        }
        byte[] nonce = new byte[16];
        RANDOM.nextBytes(nonce);
        return SharedSegment.map(this, fd, HexFormat.of().formatHex(nonce), capacity, allocator.chunkSize());
    }

    /**
     * The last reference of a segment is gone: keep it for reuse (no longer counted as used), or
     * delete it after {@link #close()} or when retired.
     */
    void freed(SharedSegment s) {
        boolean keep;
        synchronized (this) {
            live--;
            keep = !closed && !s.retired();
            if (keep) {
                kept.add(new Kept(s, System.nanoTime()));
                keptBytes += s.capacity();
            }
        }
        if (!keep) {
            s.destroy();
        }
        allocator.releaseExternal(s.capacity());
    }

    /** Deletes kept segments until {@code needed} bytes are given back (or none is kept); the bytes given back. */
    @Override
    public long giveBack(long needed) {
        List<SharedSegment> drop = new ArrayList<>();
        long freed = 0;
        synchronized (this) {
            while (freed < needed && !kept.isEmpty()) {
                SharedSegment s = kept.remove(0).segment;
                keptBytes -= s.capacity();
                drop.add(s);
                freed += s.capacity();
            }
        }
        drop.forEach(SharedSegment::destroy);
        return freed;
    }

    /** Deletes segments kept unused for longer than {@code idleNanos}; how many. */
    public int trimIdle(long idleNanos) {
        List<SharedSegment> drop = new ArrayList<>();
        long now = System.nanoTime();
        synchronized (this) {
            kept.removeIf(k -> now - k.since > idleNanos && drop.add(k.segment));
            drop.forEach(d -> keptBytes -= d.capacity());
        }
        drop.forEach(SharedSegment::destroy);
        return drop.size();
    }

    /** Bytes of kept (unused) segments: not counted as used by the allocator. */
    @Override
    public synchronized long keptBytes() {
        return keptBytes;
    }

    /** Segments in use (reserved or holding blobs). */
    public synchronized long liveSegments() {
        return live;
    }

    /**
     * Deletes the files in {@code dir} that segments of an earlier version's daemon, whose process no
     * longer runs, left behind ({@code tenplex-<pid>-<start>-<n>}).
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
            keptBytes = 0;
        }
        drop.forEach(k -> k.segment.destroy());
    }

    static void unmap(ByteBuffer mapped) {
        OffHeapBacking.free(mapped);
    }
}
