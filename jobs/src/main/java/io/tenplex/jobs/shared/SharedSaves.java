package io.tenplex.jobs.shared;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.generations.LoadChoice;
import io.tenplex.jobs.generations.SavesInFlight;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DataRef;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.store.memory.SharedSegment;
import io.tenplex.store.memory.SharedSegments;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * Saves and loads through shared memory, for a trainer on the daemon's host. A save reserves a
 * segment laid out for the rank's tensors ({@link #reserve}); the client copies every tensor into its
 * mapping; {@link #commit} publishes the whole rank at once (the segment's bytes become the tensors,
 * without a copy), replacing {@code save/<rank>}, and seals it. Nothing of a reservation is visible
 * before its commit, and a reservation whose owner dies or whose lease runs out is given back by
 * {@link #reap()}. A load pins the rank's chosen tree ({@link #pin}) so that the client can map its
 * tensors read-only until it releases them.
 */
public final class SharedSaves implements AutoCloseable {
    /** Tensors of one reservation, at most. */
    public static final int MAX_TENSORS = 1 << 20;
    /** Files up to this size come inline with a pin; larger ones are read over REST. */
    public static final int MAX_INLINE_FILE = 1 << 20;
    /** Bytes of files inline in one pin's answer, at most; the rest are read over REST. */
    public static final int MAX_INLINE_TOTAL = 16 << 20;

    /**
     * An entry a save will write: its path relative to the rank's tree, and what it is: a tensor
     * ({@code meta}) or a file of {@code fileSize} bytes ({@code meta} null).
     */
    public record Wanted(String path, TensorMeta meta, long fileSize) {
        public Wanted {
            if (meta == null && fileSize < 0) {
                throw new IllegalArgumentException("file " + path + " has a negative size");
            }
        }

        public static Wanted tensor(String path, TensorMeta meta) {
            return new Wanted(path, meta, 0);
        }

        public static Wanted file(String path, long size) {
            return new Wanted(path, null, size);
        }

        long bytes() {
            return meta != null ? meta.byteSize() : fileSize;
        }
    }

    /** Where a wanted tensor goes in the segment's file. */
    public record Placed(String path, long offset, long size) {
    }

    /** A reservation: the file to map, its nonce (in its header) and capacity, and the entries' places. */
    public record Reserved(String id, String file, String nonce, long capacity, List<Placed> tensors,
            List<Placed> files, long leaseSeconds) {
    }

    /** One entry of a pinned tree: a tensor in shared memory (file, nonce, capacity, offset) or not, or a file's bytes. */
    public record PinnedEntry(String path, String type, String dtype, long[] shape, long size, String file, String nonce,
            Long capacity, Long offset, byte[] data) {
    }

    /** A pinned load: what {@link Sealer#loadChoice} chose, with its entries. */
    /**
     * A load pin's answer; {@code restReason}: why tensors of it are not in shared memory (read them over
     * REST), null (left out of the JSON) when every tensor is; {@code copiedBytes}: the bytes the pin
     * copied into shared memory of its own (tensors held elsewhere), 0 when every tensor is mapped where
     * it lies (saved through shared memory, or placed there by a reconfiguration's move).
     */
    public record Pinned(String id, String path, long step, String source, List<PinnedEntry> entries,
            long leaseSeconds, @com.fasterxml.jackson.annotation.JsonInclude(
                    com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL) String restReason, long copiedBytes) {
    }

    /** What a client sees of an open handout (a save reservation or a load pin). */
    public record Handout(String id, String kind, String job, int rank, long pid, boolean ownerVisible, long bytes,
            long leaseLeftSeconds) {
    }

    private final Sealer jobs;
    private final TensorStore store;
    private final SharedSegments segments;
    private final ExecutorService work;
    private final SharedSpaces spaces = new SharedSpaces();

    /** @param work where a commit's checksums are computed, a share per thread */
    public SharedSaves(Sealer jobs, TensorStore store, SharedSegments segments, ExecutorService work) {
        this.jobs = jobs;
        this.store = store;
        this.segments = segments;
        this.work = work;
    }

    /** A save reservation's segment and layout, owned by its client until commit or release. */
    private static final class Reservation extends SharedSpaces.Space {
        final SharedSegment segment;
        final List<Placed> placed;
        final List<Wanted> wanted;

        Reservation(String job, int rank, SharedSpaces.Owner owner, long lease, SharedSegment segment,
                List<Wanted> wanted, List<Placed> placed) {
            super(job, rank, owner, lease, segment.capacity());
            this.segment = segment;
            this.wanted = wanted;
            this.placed = placed;
        }

        @Override
        String kind() {
            return "save";
        }

        @Override
        void end() {
            segment.release();
        }

        /** Its lease ran out while its owner may still write: the segment is not handed out again. */
        @Override
        void expire() {
            segment.retire();
            segment.release();
        }
    }

    /**
     * Reserves shared memory for {@code rank}'s tensors, owned by the process {@code pid} (started at
     * {@code start}, see {@link io.tenplex.store.memory.ProcessStart}) for at most {@code lease} seconds.
     *
     * @throws IllegalArgumentException on a bad path, a duplicate, too many tensors or a bad lease
     * @throws io.tenplex.store.memory.OutOfBudgetException when the memory budget or the segment directory is short
     */
    public Reserved reserve(String job, int rank, long pid, long start, long lease, List<Wanted> entries)
            throws IOException {
        JobLayout layout = new JobLayout(job);
        checkRank(rank);
        checkLease(lease);
        if (entries.size() > MAX_TENSORS) {
            throw new IllegalArgumentException(entries.size() + " entries in one save; at most " + MAX_TENSORS);
        }
        Set<String> seen = new HashSet<>();
        List<Placed> placed = new ArrayList<>(entries.size());
        long at = SharedSegment.HEADER;
        for (Wanted w : entries) {
            entryPath(layout, w.path(), seen);
            long size = w.bytes();
            at = SharedSegment.align(at, size);
            placed.add(new Placed(w.path(), at, size));
            try {
                at = Math.addExact(at, size);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("the entries of one save add up to more than 2^63 bytes");
            }
        }
        SharedSegment seg;
        try {
            seg = segments.acquire(at - SharedSegment.HEADER, "the save of job " + job + " rank " + rank);
        } catch (IOException e) {
            throw unavailable(e);
        }
        Reservation r = spaces.add(new Reservation(job, rank, SharedSpaces.Owner.of(pid, start), lease, seg,
                List.copyOf(entries), List.copyOf(placed)));
        List<Placed> tensors = new ArrayList<>();
        List<Placed> files = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            (entries.get(i).meta() != null ? tensors : files).add(placed.get(i));
        }
        return new Reserved(r.id, seg.file().toString(), seg.nonce(), seg.capacity(), tensors, files, lease);
    }

    /** The store path of an entry below the rank's staging tree; refuses bad and duplicate paths. */
    private static StorePath entryPath(JobLayout layout, String rel, Set<String> seen) {
        StorePath p;
        try {
            p = layout.staging("shared").resolve(StorePath.parse("/" + rel));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("bad entry path '" + rel + "': " + e.getMessage());
        }
        if (rel.isEmpty() || rel.startsWith("/") || !seen.add(p.toString())) {
            throw new IllegalArgumentException(rel.isEmpty() || rel.startsWith("/")
                    ? "entry paths are relative to the rank's tree, got '" + rel + "'"
                    : "entry '" + rel + "' is given twice");
        }
        return p;
    }

    /**
     * Publishes a reservation as {@code rank}'s saved tree (its tensors plus {@code files}, listed in
     * {@code order} when given), replacing
     * what the rank saved before in one step, then seals it as {@code step} (see {@link Sealer#seal}).
     * The reservation ends either way. The commit, until every daemon was told of its seal, excludes a
     * removal of the job: one that ran first ended the reservation (not found), one that comes later
     * waits for it.
     */
    public CompletableFuture<Sealed> commit(String job, int rank, String id, long step, int world,
            JsonNode config, Map<Integer, InetSocketAddress> daemons, Map<String, byte[]> files, List<String> order)
            throws IOException {
        SavesInFlight.Pass pass = jobs.enterSave(job, "the commit of shared-memory save " + id + " of rank " + rank
                + " of step " + step);
        try {
            return commitNow(job, rank, id, step, world, config, daemons, files, order).whenComplete((s, t) -> pass.close());
        } catch (IOException | RuntimeException e) {
            pass.close();
            throw e;
        }
    }

    private CompletableFuture<Sealed> commitNow(String job, int rank, String id, long step, int world,
            JsonNode config, Map<Integer, InetSocketAddress> daemons, Map<String, byte[]> files, List<String> order)
            throws IOException {
        SharedSpaces.Space s = spaces.take(job, id);
        if (!(s instanceof Reservation r) || r.rank != rank) {
            spaces.add(s);
            throw StoreException.conflict("handout " + id + " is not a save reservation of rank " + rank + " of job "
                    + job);
        }
        JobLayout layout = new JobLayout(job);
        StorePath staging = layout.staging("shared-" + id);
        try {
            new SharedPublish(store, work).publish(staging, r.segment, r.wanted, r.placed, files, order);
        } catch (IOException e) {
            throw unavailable(e);
        } finally {
            r.end();
        }
        // the seal takes what this commit published: another commit of the rank may replace save/<rank> meanwhile
        StorePath committed = layout.staging("shared-" + id + "-sealing");
        try {
            store.snapshot(staging, committed);
            store.move(staging, layout.savedRank(rank));
        } catch (StoreException e) {
            dropQuietly(staging); // e.g. the job's save directory is a file: nothing stays staged
            dropQuietly(committed);
            throw e;
        }
        try {
            return jobs.seal(job, step, rank, world, config, daemons, committed);
        } finally {
            dropQuietly(committed);
        }
    }

    private void dropQuietly(StorePath p) {
        try {
            store.delete(p);
        } catch (StoreException e) {
            // not there
        }
    }

    /** Ends a save reservation (nothing is published) or a load pin. */
    public void release(String job, String id) {
        spaces.take(job, id).end();
    }

    /** A load pin: the chosen tree's entries stay as they were until the pin ends; copies go with it. */
    private static final class Pin extends SharedSpaces.Space {
        final List<DataRef> refs;
        final LoadCopies.Copied copies;

        Pin(String job, int rank, SharedSpaces.Owner owner, long lease, List<DataRef> refs, long bytes,
                LoadCopies.Copied copies) {
            super(job, rank, owner, lease, bytes);
            this.refs = refs;
            this.copies = copies;
        }

        @Override
        String kind() {
            return "load";
        }

        @Override
        void end() {
            refs.forEach(DataRef::close);
            if (copies != null) {
                copies.segment().release();
            }
        }

        /** Its lease ran out while its owner may still read: the copies' segment is not handed out again. */
        @Override
        void expire() {
            if (copies != null) {
                copies.segment().retire();
            }
            end();
        }
    }

    /**
     * {@link #pin} on the shared-memory work threads: a pin may copy a rank's moved tensors
     * ({@link LoadCopies}), hundreds of MiB that an event loop must not wait for.
     */
    public CompletableFuture<Pinned> pinAsync(String job, int rank, long pid, long start, long lease) {
        return CompletableFuture.supplyAsync(() -> pin(job, rank, pid, start, lease), work);
    }

    /**
     * Pins what {@code rank} loads (see {@link Sealer#loadChoice}) for the process {@code pid}: tensors in
     * shared memory are given by file and offset, other tensors by path (read them over REST), small
     * files inline (up to {@link #MAX_INLINE_FILE} each and {@link #MAX_INLINE_TOTAL} in all).
     *
     * @throws StoreException not found when there is nothing to load
     */
    public Pinned pin(String job, int rank, long pid, long start, long lease) {
        checkLease(lease);
        LoadChoice choice = jobs.loadChoice(job, rank);
        StorePath root = StorePath.parse(choice.path());
        List<Entry> walked = new ArrayList<>();
        List<DataRef> refs = new ArrayList<>();
        LoadCopies.Outcome copies = LoadCopies.Outcome.NOTHING;
        try {
            List<DataRef> toCopy = new ArrayList<>();
            for (Entry e : store.walk(root, false)) {
                DataRef ref = store.open(e.path());
                refs.add(ref);
                walked.add(e);
                if (e.type() == EntryType.TENSOR && ref.size() > 0 && ref.sharedLocation().isEmpty()) {
                    toCopy.add(ref);
                }
            }
            copies = LoadCopies.copy(segments, toCopy);
        } catch (RuntimeException e) {
            refs.forEach(DataRef::close);
            throw e;
        }
        List<PinnedEntry> entries = PinnedEntries.of(root, walked, refs, copies.copied());
        long bytes = refs.stream().mapToLong(DataRef::size).sum();
        Pin p = spaces.add(new Pin(job, rank, SharedSpaces.Owner.of(pid, start), lease, refs, bytes, copies.copied()));
        return new Pinned(p.id, choice.path(), choice.step(), choice.source(), entries, lease, copies.restReason(),
                copies.copied() == null ? 0 : copies.copied().bytes());
    }

    /** Ends handouts whose owner is gone or whose lease ran out, and deletes long-unused segments. */
    public int reap(long keepUnusedNanos) {
        segments.trimIdle(keepUnusedNanos);
        return spaces.reap();
    }

    /** The open handouts ({@code job} null: of every job). */
    public List<Handout> describe(String job) {
        return spaces.describe(job);
    }

    public SharedSegments segments() {
        return segments;
    }

    private StoreException unavailable(IOException e) {
        return new StoreException(StoreException.Kind.UNAVAILABLE, "shared memory is not usable on this daemon: " + e);
    }

    private static void checkRank(int rank) {
        if (rank < 0 || rank >= Limits.MAX_RANKS) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + Limits.MAX_RANKS + ")");
        }
    }

    private static void checkLease(long lease) {
        if (lease < 1 || lease > SharedSpaces.MAX_LEASE_SECONDS) {
            throw new IllegalArgumentException("a lease is 1 to " + SharedSpaces.MAX_LEASE_SECONDS + " seconds, got "
                    + lease);
        }
    }

    /** Ends every handout (segments in use are deleted when the store releases their blobs). */
    @Override
    public void close() {
        spaces.endAll();
    }
}
