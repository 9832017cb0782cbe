package io.tenplex.store;

import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.memory.Blob;
import io.tenplex.store.memory.BlockChecksums;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The namespace tree of a {@link TensorStore}: directories (children in creation order) and data
 * nodes, lookups and walks, and the totals the metrics show. Not thread-safe: the store calls it
 * under its lock.
 */
class Tree { // not final: a test makes a step of a publication throw
    static final String SIDECAR = ".meta";

    abstract static sealed class Node permits Dir, Data {
        /** When the node was written (a copy keeps its original's time): the mtime FUSE shows. */
        long writtenMillis = System.currentTimeMillis();
    }

    static final class Dir extends Node {
        final Map<String, Node> children = new LinkedHashMap<>();
    }

    static final class Data extends Node {
        final TensorMeta meta; // null for a file
        final Blob blob;
        final BlockChecksums sums;

        Data(TensorMeta meta, Blob blob, BlockChecksums sums) {
            this.meta = meta;
            this.blob = blob;
            this.sums = sums;
        }

        EntryType type() {
            return meta != null ? EntryType.TENSOR : EntryType.FILE;
        }
    }

    /**
     * About what a directory or an entry (its node, map entry, name, metadata, blob and checksum objects) holds of the
     * heap: measured 396 bytes a node for a directory and a tensor, 560 for a tensor alone.
     */
    static final long NODE_HEAP_BYTES = 512;

    final Dir root = new Dir();
    long tensorCount;
    long fileCount;
    long tensorBytes;
    /** Directories and entries below the root. */
    long nodes;
    /** The most {@link #nodes} there may be: by default as many as half the heap holds. */
    long maxNodes = Math.max(1 << 16, Runtime.getRuntime().maxMemory() / 2 / NODE_HEAP_BYTES);

    /**
     * Where a call of {@link #mkdirs(StorePath, Made)} began making directories, to take them away again, and how many
     * it made and counted.
     */
    static final class Made {
        Dir parent;
        String name;
        int count;
    }

    /**
     * Insufficient storage when {@code more} nodes would exceed {@link #maxNodes}; nothing is refused that adds none
     * (a store above a limit lowered below its count still takes them).
     */
    void checkRoom(long more, Object what) {
        if (more > 0 && more > maxNodes - nodes) {
            throw noRoom(more, nodes, what);
        }
    }

    StoreException noRoom(long more, long held, Object what) {
        return new StoreException(StoreException.Kind.INSUFFICIENT_STORAGE, what + " needs " + more
                + " more directories and entries, and the store holds " + held + " of the " + maxNodes
                + " its heap has room for (each takes about " + NODE_HEAP_BYTES
                + " bytes; a larger -Xmx raises the limit, deleting entries makes room)");
    }

    /** The components of {@code path} that are not there yet (the directories mkdirs would make). */
    long missing(StorePath path) {
        Node at = root;
        int depth = 0;
        for (String part : path.parts()) {
            Node next = at instanceof Dir d ? d.children.get(part) : null;
            if (next == null) {
                break;
            }
            at = next;
            depth++;
        }
        return path.parts().size() - depth;
    }

    /** The nodes of a subtree, its root included. */
    static long count(Node n) {
        long c = 1;
        if (n instanceof Dir d) {
            for (Node child : d.children.values()) {
                c += count(child);
            }
        }
        return c;
    }

    /**
     * Bad request when {@code node}, moved or copied from {@code from} to {@code to}, would have a node more than
     * {@link StorePath#MAX_DEPTH} components deep: the paths that name nodes are bounded, so the tree is too.
     */
    static void checkDepth(Node node, StorePath from, StorePath to, String what) {
        int room = StorePath.MAX_DEPTH - to.parts().size();
        if (to.parts().size() > from.parts().size() && deeperThan(node, room)) {
            throw StoreException.badRequest(what + " would put entries more than " + StorePath.MAX_DEPTH
                    + " components deep (a path of at most 4096 bytes holds no more)");
        }
    }

    /** Whether {@code n} has a node more than {@code levels} levels below it. */
    private static boolean deeperThan(Node n, int levels) {
        if (n instanceof Dir d) {
            if (levels <= 0) {
                return !d.children.isEmpty();
            }
            for (Node c : d.children.values()) {
                if (deeperThan(c, levels - 1)) {
                    return true;
                }
            }
        }
        return false;
    }

    Node lookup(StorePath path) {
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

    /** The directory at {@code path}, made with its missing parents (callers checked the path first). */
    Dir mkdirs(StorePath path) {
        return mkdirs(path, null);
    }

    /** As {@link #mkdirs(StorePath)}; {@code made}, when given, learns where the directories it made begin. */
    Dir mkdirs(StorePath path, Made made) {
        Dir at = root;
        for (String part : path.parts()) {
            Node next = at.children.get(part);
            if (next == null) {
                if (made != null && made.parent == null) { // before the put, which may throw once it went in
                    made.parent = at;
                    made.name = part;
                }
                next = new Dir();
                at.children.put(part, next);
                nodes++;
                if (made != null) {
                    made.count++;
                }
            }
            at = (Dir) next;
        }
        return at;
    }

    /** The tensor whose sidecar {@code path} names, or null. */
    Data sidecarOwner(StorePath path) {
        String name = path.name();
        if (!name.endsWith(SIDECAR) || name.length() == SIDECAR.length()) {
            return null;
        }
        Node owner = lookup(path.parent().child(name.substring(0, name.length() - SIDECAR.length())));
        return owner instanceof Data d && d.meta != null ? d : null;
    }

    /** Not a directory when an existing ancestor-or-self of {@code dir} is a file or tensor (missing parts are fine). */
    void checkDirectoryPath(StorePath dir) {
        Node at = root;
        for (String part : dir.parts()) {
            Node next = ((Dir) at).children.get(part);
            if (next instanceof Data d) {
                throw StoreException.notADirectory(dir + " is a " + d.type().jsonName() + ", not a directory");
            }
            if (next == null) {
                return;
            }
            at = next;
        }
    }

    /** Exists when {@code name} in {@code dir} is the sidecar of a tensor there. */
    static void checkNotSidecarOfTensor(Dir dir, String name, StorePath path) {
        if (name.endsWith(SIDECAR)
                && dir.children.get(name.substring(0, name.length() - SIDECAR.length())) instanceof Data d
                && d.meta != null) {
            throw StoreException.exists(path + " is the sidecar of tensor "
                    + path.parent().child(name.substring(0, name.length() - SIDECAR.length())) + " (read-only)");
        }
    }

    void account(Data d, int sign) {
        if (d.meta != null) {
            tensorCount += sign;
            tensorBytes += sign * d.blob.size();
        } else {
            fileCount += sign;
        }
    }

    /** Unaccounts a removed subtree: its blobs go to {@code toRelease}; counts: entries, dirs, bytes. */
    void collect(Node node, List<Blob> toRelease, long[] counts) {
        nodes--;
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

    /**
     * Puts a copy of the subtree {@code n} at {@code to} (missing parents made), sharing the bytes: each blob retained
     * once more. The copy is made whole before anything is counted or retained, so a throw part-way (a full heap)
     * leaves neither.
     */
    void putCopy(Node n, StorePath to) {
        Node c = copy(n);
        Dir parent = mkdirs(to.parent());
        try {
            parent.children.put(to.name(), c);
        } catch (Throwable t) { // the put may throw once the key went in: take it out, uncounted
            parent.children.remove(to.name());
            throw t;
        }
        adopt(c);
    }

    /** A copy of a subtree sharing the bytes: new nodes only, not counted and holding no blob yet. */
    Node copy(Node n) {
        if (n instanceof Data d) {
            Data c = new Data(d.meta, d.blob, d.sums);
            c.writtenMillis = d.writtenMillis;
            return c;
        }
        Dir c = new Dir();
        for (Map.Entry<String, Node> e : ((Dir) n).children.entrySet()) {
            c.children.put(e.getKey(), copy(e.getValue()));
        }
        return c;
    }

    /** Counts the nodes of a copy put in the tree and retains its blobs (allocating nothing). */
    private void adopt(Node n) {
        nodes++;
        if (n instanceof Data d) {
            d.blob.retain();
            account(d, +1);
        } else {
            for (Node c : ((Dir) n).children.values()) {
                adopt(c);
            }
        }
    }

    static Entry entry(StorePath path, Node n) {
        if (n instanceof Dir d) {
            return new Entry(path, EntryType.DIR, 0, null, d.children.size(), d.writtenMillis);
        }
        Data d = (Data) n;
        return new Entry(path, d.type(), d.blob.size(), d.meta, 0, d.writtenMillis);
    }

    static Entry sidecarEntry(StorePath path, Data owner) {
        return new Entry(path, EntryType.SIDECAR, owner.meta.sidecarBytes().length, null, 0, owner.writtenMillis);
    }

    /** Adds {@code n}'s entry, preceded by its sidecar's when {@code sidecars} and it is a tensor. */
    static void addEntry(List<Entry> out, StorePath p, Node n, boolean sidecars) {
        if (sidecars && n instanceof Data d && d.meta != null) {
            out.add(sidecarEntry(p.parent().child(p.name() + SIDECAR), d));
        }
        out.add(entry(p, n));
    }

    /** Every non-directory entry at or below {@code path}, depth-first in creation order. */
    static void walk(StorePath path, Node n, boolean sidecars, List<Entry> out) {
        if (n instanceof Dir d) {
            for (Map.Entry<String, Node> e : d.children.entrySet()) {
                walk(path.child(e.getKey()), e.getValue(), sidecars, out);
            }
        } else {
            addEntry(out, path, n, sidecars);
        }
    }
}
