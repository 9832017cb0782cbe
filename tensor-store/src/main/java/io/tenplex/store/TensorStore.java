package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A daemon's namespace tree of directories, files and tensors over off-heap memory.
 *
 * <p>Thread-safe. Structure changes take a write lock and are all-or-nothing: a put either publishes
 * the new value (readers then see it whole) or throws and leaves the tree unchanged; the bytes of
 * replaced and deleted entries are freed once their last reader closes its {@link DataRef}.
 * Directories list their children in creation order; a replace keeps its entry's place.
 *
 * <p>Every tensor {@code t} is also visible as a read-only file {@code t.meta} holding the
 * prototype's sidecar text; names that would collide with a sidecar are refused.
 */
public final class TensorStore implements AutoCloseable {
    private static final String SIDECAR = ".meta";

    private final Allocator allocator;
    private final int checksumBlock;
    private final ReadWriteLock lock = new ReentrantReadWriteLock();
    private final Dir root = new Dir();
    private long tensorCount;
    private long fileCount;
    private long tensorBytes;

    public TensorStore(Allocator allocator) {
        this(allocator, BlockChecksums.DEFAULT_BLOCK);
    }

    public TensorStore(Allocator allocator, int checksumBlock) {
        this.allocator = allocator;
        this.checksumBlock = checksumBlock;
    }

    public Allocator allocator() {
        return allocator;
    }

    public int checksumBlock() {
        return checksumBlock;
    }

    private abstract static sealed class Node permits Dir, Data {
    }

    private static final class Dir extends Node {
        final Map<String, Node> children = new LinkedHashMap<>();
    }

    private static final class Data extends Node {
        final TensorMeta meta; // null for a file
        final Blob blob;
        final BlockChecksums sums;

        Data(TensorMeta meta, Blob blob, BlockChecksums sums) {
            this.meta = meta;
            this.blob = blob;
            this.sums = sums;
        }
    }

    /** One entry of an atomic batch of puts. The blob's reference passes to the store. */
    public record Put(StorePath path, TensorMeta meta, Blob blob, BlockChecksums sums) {
        public static Put file(StorePath path, Blob blob, BlockChecksums sums) {
            return new Put(path, null, blob, sums);
        }
    }

    /**
     * Publishes a tensor. Ownership of {@code blob}'s reference passes to the store, also on failure
     * (then it is released).
     *
     * @throws StoreException conflict when the path exists (and not {@code replace}), is a directory,
     *     has a file as an ancestor, or collides with a sidecar name; bad request on size mismatch
     */
    public void putTensor(StorePath path, TensorMeta meta, Blob blob, BlockChecksums sums, boolean replace) {
        putAll(List.of(new Put(path, meta, blob, sums)), replace);
    }

    /** Publishes a file; ownership of the blob's reference passes to the store (see {@link #putTensor}). */
    public void putFile(StorePath path, Blob blob, BlockChecksums sums, boolean replace) {
        putAll(List.of(Put.file(path, blob, sums)), replace);
    }

    /** Publishes all entries or none; every blob's reference passes to the store. */
    public void putAll(List<Put> puts, boolean replace) {
        List<Blob> toRelease = new ArrayList<>();
        lock.writeLock().lock();
        try {
            for (Put p : puts) {
                checkPut(p, replace, puts);
            }
            for (Put p : puts) {
                Dir dir = mkdirsLocked(p.path().parent());
                Node old = dir.children.put(p.path().name(), new Data(p.meta(), p.blob(), p.sums()));
                if (old instanceof Data d) {
                    account(d, -1);
                    toRelease.add(d.blob);
                }
                account((Data) dir.children.get(p.path().name()), +1);
            }
        } catch (RuntimeException e) {
            for (Put p : puts) {
                toRelease.add(p.blob());
            }
            throw e;
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
    }

    private void checkPut(Put p, boolean replace, List<Put> batch) {
        StorePath path = p.path();
        if (path.isRoot()) {
            throw StoreException.badRequest("cannot store data at the root path");
        }
        if (p.meta() != null && p.meta().byteSize() != p.blob().size()) {
            throw StoreException.badRequest("tensor " + p.meta() + " needs " + p.meta().byteSize() + " bytes, got "
                    + p.blob().size());
        }
        Node at = root;
        StorePath walked = StorePath.root();
        for (String part : path.parent().parts()) {
            walked = walked.child(part);
            Node next = ((Dir) at).children.get(part);
            if (next == null) {
                checkNotSidecarOfTensor((Dir) at, part, walked);
                break;
            }
            if (next instanceof Data) {
                throw StoreException.notADirectory(walked + " is a " + kind((Data) next) + ", not a directory");
            }
            at = next;
        }
        String name = path.name();
        Node existing = lookupLocked(path);
        if (existing instanceof Dir) {
            throw StoreException.isADirectory(path + " is a directory");
        }
        if (existing != null && !replace) {
            throw StoreException.exists(path + " exists (send x-replace: true or ?replace=true to replace it)");
        }
        if (existing == null && lookupLocked(path.parent()) instanceof Dir parent) {
            checkNotSidecarOfTensor(parent, name, path);
            if (p.meta() != null && parent.children.containsKey(name + SIDECAR)) {
                throw StoreException.exists(path + SIDECAR + " exists, so " + path
                        + " cannot be a tensor (its sidecar would collide)");
            }
        }
        for (Put other : batch) {
            if (other != p && other.path().equals(path)) {
                throw StoreException.conflict(path + " appears twice in one upload");
            }
            if (other != p && isAncestor(other.path(), path)) {
                throw StoreException.notADirectory(other.path() + " cannot be both data and a directory in one upload");
            }
        }
    }

    private static boolean isAncestor(StorePath a, StorePath b) {
        return a.parts().size() < b.parts().size() && b.parts().subList(0, a.parts().size()).equals(a.parts());
    }

    private static void checkNotSidecarOfTensor(Dir dir, String name, StorePath path) {
        if (name.endsWith(SIDECAR)
                && dir.children.get(name.substring(0, name.length() - SIDECAR.length())) instanceof Data d
                && d.meta != null) {
            throw StoreException.exists(path + " is the sidecar of tensor "
                    + path.parent().child(name.substring(0, name.length() - SIDECAR.length())) + " (read-only)");
        }
    }

    private static String kind(Data d) {
        return d.meta != null ? "tensor" : "file";
    }

    private void account(Data d, int sign) {
        if (d.meta != null) {
            tensorCount += sign;
            tensorBytes += sign * d.blob.size();
        } else {
            fileCount += sign;
        }
    }

    /**
     * Publishes the bytes of the file or tensor at {@code from} also under {@code to}, without copying
     * (both names share the memory until one is replaced or deleted).
     */
    public void link(StorePath from, StorePath to, boolean replace) {
        Data d;
        lock.readLock().lock();
        try {
            Node n = lookupLocked(from);
            if (!(n instanceof Data data)) {
                throw n == null ? StoreException.notFound("no file or tensor at " + from)
                        : new StoreException(StoreException.Kind.NOT_FOUND, StoreException.Kind.IS_A_DIRECTORY,
                                "no file or tensor at " + from + " (it is a directory)");
            }
            d = data;
            d.blob.retain();
        } finally {
            lock.readLock().unlock();
        }
        putAll(List.of(new Put(to, d.meta, d.blob, d.sums)), replace);
    }

    /**
     * Moves the entry at {@code from} to {@code to} in one step, replacing whatever {@code to} held
     * (a whole directory tree included): readers see the old tree or the new one, never a mix. This
     * is how a staged generation becomes the one training loads.
     *
     * @throws StoreException not found when {@code from} is missing; conflict when {@code to} is
     *     inside {@code from} or an ancestor of {@code to} is not a directory
     */
    public void move(StorePath from, StorePath to) {
        if (from.isRoot() || to.isRoot() || isAncestor(from, to) || from.equals(to)) {
            throw StoreException.conflict("cannot move " + from + " to " + to);
        }
        List<Blob> toRelease = new ArrayList<>();
        lock.writeLock().lock();
        try {
            Node node = lookupLocked(from);
            if (node == null) {
                throw StoreException.notFound("node not exist: " + from);
            }
            checkDirectoryPathLocked(to.parent());
            Dir target = mkdirsLocked(to.parent());
            ((Dir) lookupLocked(from.parent())).children.remove(from.name());
            Node old = target.children.put(to.name(), node);
            if (old != null) {
                collect(old, toRelease, new long[3]);
            }
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
    }

    /**
     * Copies the tree at {@code from} (a directory, file or tensor) to {@code to} in one step, sharing
     * the bytes: the copy is what {@code from} held at that instant, and later writes under either
     * name do not show through the other. Empty directories are copied too.
     *
     * @throws StoreException not found when {@code from} is missing; conflict when {@code to} exists,
     *     is inside {@code from}, or an ancestor of {@code to} is not a directory
     */
    public void snapshot(StorePath from, StorePath to) {
        if (to.isRoot() || isAncestor(from, to) || from.equals(to)) {
            throw StoreException.conflict("cannot snapshot " + from + " to " + to);
        }
        lock.writeLock().lock();
        try {
            Node node = lookupLocked(from);
            if (node == null) {
                throw StoreException.notFound("node not exist: " + from);
            }
            if (lookupLocked(to) != null) {
                throw StoreException.exists(to + " exists");
            }
            checkDirectoryPathLocked(to.parent());
            mkdirsLocked(to.parent()).children.put(to.name(), copyLocked(node));
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Conflict when an existing ancestor-or-self of {@code dir} is a file or tensor (missing parts are fine). */
    private void checkDirectoryPathLocked(StorePath dir) {
        Node at = root;
        for (String part : dir.parts()) {
            Node next = ((Dir) at).children.get(part);
            if (next instanceof Data d) {
                throw StoreException.notADirectory(dir + " is a " + kind(d) + ", not a directory");
            }
            if (next == null) {
                return;
            }
            at = next;
        }
    }

    private Node copyLocked(Node n) {
        if (n instanceof Data d) {
            d.blob.retain();
            Data c = new Data(d.meta, d.blob, d.sums);
            account(c, +1);
            return c;
        }
        Dir c = new Dir();
        ((Dir) n).children.forEach((name, child) -> c.children.put(name, copyLocked(child)));
        return c;
    }

    /** Creates a directory and its missing parents; existing directories are fine. */
    public void mkdirs(StorePath path) {
        lock.writeLock().lock();
        try {
            Node at = root;
            StorePath walked = StorePath.root();
            for (String part : path.parts()) {
                walked = walked.child(part);
                Node next = ((Dir) at).children.get(part);
                if (next instanceof Data d) {
                    throw StoreException.notADirectory(walked + " is a " + kind(d) + ", not a directory");
                }
                if (next == null) {
                    checkNotSidecarOfTensor((Dir) at, part, walked);
                    break;
                }
                at = next;
            }
            mkdirsLocked(path);
        } finally {
            lock.writeLock().unlock();
        }
    }

    private Dir mkdirsLocked(StorePath path) {
        Dir at = root;
        for (String part : path.parts()) {
            Node next = at.children.get(part);
            if (next == null) {
                next = new Dir();
                at.children.put(part, next);
            }
            at = (Dir) next;
        }
        return at;
    }

    private Node lookupLocked(StorePath path) {
        Node at = root;
        for (String part : path.parts()) {
            if (!(at instanceof Dir d)) {
                return null;
            }
            at = d.children.get(part);
            if (at == null) {
                return null;
            }
        }
        return at;
    }

    /** The tensor whose sidecar {@code path} names, or null. */
    private Data sidecarOwnerLocked(StorePath path) {
        String name = path.name();
        if (!name.endsWith(SIDECAR) || name.length() == SIDECAR.length()) {
            return null;
        }
        Node owner = lookupLocked(path.parent().child(name.substring(0, name.length() - SIDECAR.length())));
        return owner instanceof Data d && d.meta != null ? d : null;
    }

    /**
     * Deletes an entry; directories recursively.
     *
     * @throws StoreException not found; conflict for a sidecar; bad request for the root
     */
    public DeleteCounts delete(StorePath path) {
        if (path.isRoot()) {
            throw StoreException.badRequest("refusing to delete the root directory");
        }
        List<Blob> toRelease = new ArrayList<>();
        long[] counts = new long[3];
        lock.writeLock().lock();
        try {
            Node node = lookupLocked(path);
            if (node == null) {
                if (sidecarOwnerLocked(path) != null) {
                    throw StoreException.wrongType(StoreException.Kind.CONFLICT, path + " is a tensor's sidecar; delete the tensor instead");
                }
                throw StoreException.notFound("node not exist: " + path);
            }
            ((Dir) lookupLocked(path.parent())).children.remove(path.name());
            collect(node, toRelease, counts);
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
        return new DeleteCounts(counts[0], counts[1], counts[2]);
    }

    private void collect(Node node, List<Blob> toRelease, long[] counts) {
        if (node instanceof Data d) {
            account(d, -1);
            toRelease.add(d.blob);
            counts[0] += d.meta != null ? 2 : 1;
            counts[2] += d.blob.size();
        } else {
            counts[1]++;
            for (Node c : ((Dir) node).children.values()) {
                collect(c, toRelease, counts);
            }
        }
    }

    /** What is at {@code path} (a sidecar included), or empty. */
    public Optional<Entry> stat(StorePath path) {
        lock.readLock().lock();
        try {
            Node n = lookupLocked(path);
            if (n != null) {
                return Optional.of(entry(path, n));
            }
            Data owner = sidecarOwnerLocked(path);
            return owner == null ? Optional.empty()
                    : Optional.of(new Entry(path, EntryType.SIDECAR, owner.meta.sidecarBytes().length, null, 0));
        } finally {
            lock.readLock().unlock();
        }
    }

    private static Entry entry(StorePath path, Node n) {
        if (n instanceof Dir d) {
            return new Entry(path, EntryType.DIR, 0, null, d.children.size());
        }
        Data d = (Data) n;
        return new Entry(path, d.meta != null ? EntryType.TENSOR : EntryType.FILE, d.blob.size(), d.meta, 0);
    }

    /**
     * The children of a directory in creation order; with {@code sidecars}, every tensor is preceded
     * by its {@code .meta} sidecar (the prototype created it first).
     *
     * @throws StoreException not found, or conflict when {@code path} is not a directory
     */
    public List<Entry> list(StorePath path, boolean sidecars) {
        lock.readLock().lock();
        try {
            Node n = lookupLocked(path);
            if (n == null) {
                throw StoreException.notFound("node not exist: " + path);
            }
            if (!(n instanceof Dir dir)) {
                throw StoreException.notADirectory(path + " is not a directory");
            }
            List<Entry> out = new ArrayList<>(dir.children.size());
            for (Map.Entry<String, Node> e : dir.children.entrySet()) {
                addEntry(out, path.child(e.getKey()), e.getValue(), sidecars);
            }
            return out;
        } finally {
            lock.readLock().unlock();
        }
    }

    private static void addEntry(List<Entry> out, StorePath p, Node n, boolean sidecars) {
        if (sidecars && n instanceof Data d && d.meta != null) {
            out.add(new Entry(p.parent().child(p.name() + SIDECAR), EntryType.SIDECAR, d.meta.sidecarBytes().length,
                    null, 0));
        }
        out.add(entry(p, n));
    }

    /**
     * Every non-directory entry at or below {@code path}, depth-first in creation order (a file lists
     * itself), with sidecars before their tensors when asked.
     */
    public List<Entry> walk(StorePath path, boolean sidecars) {
        lock.readLock().lock();
        try {
            Node n = lookupLocked(path);
            List<Entry> out = new ArrayList<>();
            if (n == null) {
                Data owner = sidecarOwnerLocked(path);
                if (owner == null || !sidecars) {
                    throw StoreException.notFound("node not exist: " + path);
                }
                out.add(new Entry(path, EntryType.SIDECAR, owner.meta.sidecarBytes().length, null, 0));
                return out;
            }
            walkLocked(path, n, sidecars, out);
            return out;
        } finally {
            lock.readLock().unlock();
        }
    }

    private static void walkLocked(StorePath path, Node n, boolean sidecars, List<Entry> out) {
        if (n instanceof Dir d) {
            for (Map.Entry<String, Node> e : d.children.entrySet()) {
                walkLocked(path.child(e.getKey()), e.getValue(), sidecars, out);
            }
        } else {
            addEntry(out, path, n, sidecars);
        }
    }

    /**
     * Opens the bytes of a file, tensor or sidecar for reading.
     *
     * @throws StoreException not found, or conflict for a directory
     */
    public DataRef open(StorePath path) {
        lock.readLock().lock();
        try {
            Node n = lookupLocked(path);
            if (n instanceof Data d) {
                return new DataRef(path, d.meta != null ? EntryType.TENSOR : EntryType.FILE, d.meta, d.blob.retain(),
                        d.sums);
            }
            if (n instanceof Dir) {
                throw StoreException.isADirectory(path + " is a directory");
            }
            Data owner = sidecarOwnerLocked(path);
            if (owner != null) {
                return new DataRef(path, owner.meta.toSidecar().getBytes(StandardCharsets.US_ASCII));
            }
            throw StoreException.notFound("node not exist: " + path);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Opens a tensor; anything else is not found. */
    public DataRef openTensor(StorePath path) {
        DataRef ref = open(path);
        if (ref.type() != EntryType.TENSOR) {
            ref.close();
            throw StoreException.wrongType(StoreException.Kind.NOT_FOUND, "no tensor at " + path + " (it is a " + ref.type().jsonName() + ")");
        }
        return ref;
    }

    /** Totals for metrics: tensors, files, tensor bytes. */
    public long[] totals() {
        lock.readLock().lock();
        try {
            return new long[] {tensorCount, fileCount, tensorBytes};
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Deletes everything and closes the allocator (which throws if a reader still holds bytes). */
    @Override
    public void close() {
        List<Blob> toRelease = new ArrayList<>();
        lock.writeLock().lock();
        try {
            for (Node c : root.children.values()) {
                collect(c, toRelease, new long[3]);
            }
            root.children.clear();
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
        allocator.close();
    }
}
