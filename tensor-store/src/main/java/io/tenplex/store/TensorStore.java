package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Allocator;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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
    private final Allocator allocator;
    private final int checksumBlock;
    private final ReadWriteLock lock = new ReentrantReadWriteLock();
    private final Tree tree = new Tree();

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

    /**
     * Sets the most directories and entries the store holds (by default as many as half the heap has room for, at
     * about 512 bytes each); beyond it, anything that would add more is refused (insufficient storage).
     */
    public void limitNodes(long max) {
        if (max < 0) {
            throw new IllegalArgumentException("a limit of " + max + " nodes");
        }
        lock.writeLock().lock();
        try {
            tree.maxNodes = max;
        } finally {
            lock.writeLock().unlock();
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
     * @throws StoreException conflict when the path exists (and not {@code replace}; detail EXISTS), is
     *     a directory (IS_A_DIRECTORY), has a file as an ancestor (NOT_A_DIRECTORY), or collides with a
     *     sidecar name (EXISTS); bad request on size mismatch
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
        boolean published = false;
        lock.writeLock().lock();
        try {
            PutCheck.checkBatch(puts);
            PutCheck.Checker checker = new PutCheck.Checker(tree, replace);
            for (Put p : puts) {
                checker.check(p);
            }
            new Publication(tree, puts.size()).publish(puts, toRelease);
            published = true;
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
            if (!published) { // refused, or an Error part-way: Publication undid its steps, the blobs are ours
                puts.forEach(p -> p.blob().release());
            }
        }
    }

    /**
     * Publishes the bytes of the file or tensor at {@code from} also under {@code to}, without copying
     * (both names share the memory until one is replaced or deleted).
     */
    public void link(StorePath from, StorePath to, boolean replace) {
        Tree.Data d;
        lock.readLock().lock();
        try {
            Tree.Node n = tree.lookup(from);
            if (!(n instanceof Tree.Data data)) {
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
     *     inside {@code from} or an ancestor of {@code to} is not a directory (NOT_A_DIRECTORY)
     */
    public void move(StorePath from, StorePath to) {
        if (from.isRoot() || to.isRoot() || PutCheck.isAncestor(from, to) || from.equals(to)) {
            throw StoreException.conflict("cannot move " + from + " to " + to);
        }
        List<Blob> toRelease = new ArrayList<>();
        lock.writeLock().lock();
        try {
            Tree.Node node = existing(from);
            tree.checkDirectoryPath(to.parent());
            Tree.checkDepth(node, from, to, "moving " + from + " to " + to);
            if (node instanceof Tree.Data d && d.meta != null) {
                PutCheck.checkTensorName(to);
            }
            tree.checkRoom(tree.missing(to.parent()), "moving " + from + " to " + to);
            Tree.Dir target = tree.mkdirs(to.parent());
            Tree.Dir source = (Tree.Dir) tree.lookup(from.parent());
            Tree.Node old = putMoved(target, to.name(), node);
            source.children.remove(from.name()); // after the put: a put that throws leaves the entry where it was
            if (old != null) { // (when {@code to} is an ancestor of {@code from}, old no longer holds the entry)
                tree.collect(old, toRelease, new long[3]);
            }
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
    }

    /** Puts {@code node} as {@code name} of {@code target}; a put that throws (a full heap) leaves target as it was. */
    private static Tree.Node putMoved(Tree.Dir target, String name, Tree.Node node) {
        Tree.Node old = target.children.get(name);
        try {
            target.children.put(name, node); // replacing an existing key allocates nothing
        } catch (Throwable t) { // a new key may be in when the map's resize throws
            if (old == null) {
                target.children.remove(name);
            }
            throw t;
        }
        return old;
    }

    /**
     * Copies the tree at {@code from} (a directory, file or tensor) to {@code to} in one step, sharing
     * the bytes: the copy is what {@code from} held at that instant, and later writes under either
     * name do not show through the other. Empty directories are copied too.
     *
     * @throws StoreException not found when {@code from} is missing; conflict when {@code to} exists
     *     (EXISTS), is inside {@code from}, or an ancestor of {@code to} is not a directory
     */
    public void snapshot(StorePath from, StorePath to) {
        if (to.isRoot() || PutCheck.isAncestor(from, to) || from.equals(to)) {
            throw StoreException.conflict("cannot snapshot " + from + " to " + to);
        }
        lock.writeLock().lock();
        try {
            Tree.Node node = existing(from);
            if (tree.lookup(to) != null) {
                throw StoreException.exists(to + " exists");
            }
            tree.checkDirectoryPath(to.parent());
            Tree.checkDepth(node, from, to, "a snapshot of " + from + " at " + to);
            if (node instanceof Tree.Data d && d.meta != null) {
                PutCheck.checkTensorName(to);
            }
            tree.checkRoom(tree.missing(to.parent()) + Tree.count(node), "a snapshot of " + from);
            tree.putCopy(node, to);
        } finally {
            lock.writeLock().unlock();
        }
    }

    private Tree.Node existing(StorePath path) {
        Tree.Node node = tree.lookup(path);
        if (node == null) {
            throw StoreException.notFound("node not exist: " + path);
        }
        return node;
    }

    /** Creates a directory and its missing parents; existing directories are fine. */
    public void mkdirs(StorePath path) {
        lock.writeLock().lock();
        try {
            PutCheck.checkAncestors(tree, path);
            tree.checkRoom(tree.missing(path), "making " + path);
            tree.mkdirs(path);
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Deletes an entry; directories recursively.
     *
     * @throws StoreException not found; conflict for a sidecar (WRONG_TYPE); bad request for the root
     */
    public DeleteCounts delete(StorePath path) {
        if (path.isRoot()) {
            throw StoreException.badRequest("refusing to delete the root directory");
        }
        List<Blob> toRelease = new ArrayList<>();
        long[] counts = new long[3];
        lock.writeLock().lock();
        try {
            Tree.Node node = tree.lookup(path);
            if (node == null && tree.sidecarOwner(path) != null) {
                throw StoreException.wrongType(StoreException.Kind.CONFLICT,
                        path + " is a tensor's sidecar; delete the tensor instead");
            }
            existing(path);
            ((Tree.Dir) tree.lookup(path.parent())).children.remove(path.name());
            tree.collect(node, toRelease, counts);
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
        return new DeleteCounts(counts[0], counts[1], counts[2]);
    }

    /** What is at {@code path} (a sidecar included), or empty. */
    public Optional<Entry> stat(StorePath path) {
        lock.readLock().lock();
        try {
            Tree.Node n = tree.lookup(path);
            if (n != null) {
                return Optional.of(Tree.entry(path, n));
            }
            Tree.Data owner = tree.sidecarOwner(path);
            return owner == null ? Optional.empty() : Optional.of(Tree.sidecarEntry(path, owner));
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * The children of a directory in creation order; with {@code sidecars}, every tensor is preceded
     * by its {@code .meta} sidecar (the prototype created it first).
     *
     * @throws StoreException not found, or conflict when {@code path} is not a directory (NOT_A_DIRECTORY)
     */
    public List<Entry> list(StorePath path, boolean sidecars) {
        lock.readLock().lock();
        try {
            if (!(existing(path) instanceof Tree.Dir dir)) {
                throw StoreException.notADirectory(path + " is not a directory");
            }
            List<Entry> out = new ArrayList<>(dir.children.size());
            for (Map.Entry<String, Tree.Node> e : dir.children.entrySet()) {
                Tree.addEntry(out, path.child(e.getKey()), e.getValue(), sidecars);
            }
            return out;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Every non-directory entry at or below {@code path}, depth-first in creation order (a file lists
     * itself), with sidecars before their tensors when asked.
     */
    public List<Entry> walk(StorePath path, boolean sidecars) {
        lock.readLock().lock();
        try {
            Tree.Node n = tree.lookup(path);
            List<Entry> out = new ArrayList<>();
            if (n == null) {
                Tree.Data owner = tree.sidecarOwner(path);
                if (owner == null || !sidecars) {
                    throw StoreException.notFound("node not exist: " + path);
                }
                out.add(Tree.sidecarEntry(path, owner));
                return out;
            }
            Tree.walk(path, n, sidecars, out);
            return out;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Opens the bytes of a file, tensor or sidecar for reading.
     *
     * @throws StoreException not found, or conflict for a directory (IS_A_DIRECTORY)
     */
    public DataRef open(StorePath path) {
        lock.readLock().lock();
        try {
            Tree.Node n = tree.lookup(path);
            if (n instanceof Tree.Data d) {
                return new DataRef(path, d.type(), d.meta, d.blob.retain(), d.sums);
            }
            if (n instanceof Tree.Dir) {
                throw StoreException.isADirectory(path + " is a directory");
            }
            Tree.Data owner = tree.sidecarOwner(path);
            if (owner != null) {
                return new DataRef(path, owner.meta.toSidecar().getBytes(StandardCharsets.US_ASCII));
            }
            throw StoreException.notFound("node not exist: " + path);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Opens a tensor; anything else is not found (detail WRONG_TYPE when it is something else). */
    public DataRef openTensor(StorePath path) {
        DataRef ref = open(path);
        if (ref.type() != EntryType.TENSOR) {
            ref.close();
            throw StoreException.wrongType(StoreException.Kind.NOT_FOUND, "no tensor at " + path + " (it is a "
                    + ref.type().jsonName() + ")");
        }
        return ref;
    }

    /**
     * Totals for metrics: tensors, files, tensor bytes, directories and entries (the nodes of the tree), and the most
     * there may be.
     */
    public long[] totals() {
        lock.readLock().lock();
        try {
            return new long[] {tree.tensorCount, tree.fileCount, tree.tensorBytes, tree.nodes, tree.maxNodes};
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
            for (Tree.Node c : tree.root.children.values()) {
                tree.collect(c, toRelease, new long[3]);
            }
            tree.root.children.clear();
        } finally {
            lock.writeLock().unlock();
            toRelease.forEach(Blob::release);
        }
        allocator.close();
    }
}
