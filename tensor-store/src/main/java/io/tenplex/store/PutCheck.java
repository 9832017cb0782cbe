package io.tenplex.store;

import java.nio.charset.StandardCharsets;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Whether a batch of puts may be published: every refusal before anything changes. Under the store's lock. */
final class PutCheck {
    private PutCheck() {
    }

    /**
     * Checks the puts of one batch against the tree, in order; the tree must not change meanwhile. A
     * directory's ancestors are checked and the directory looked up once for a run of puts into it
     * (a state's many leaves of one module).
     */
    static final class Checker {
        private final Tree tree;
        private final boolean replace;
        private StorePath lastDir;
        private Tree.Node lastDirNode;

        Checker(Tree tree, boolean replace) {
            this.tree = tree;
            this.replace = replace;
        }

        void check(TensorStore.Put p) {
            StorePath path = p.path();
            if (path.isRoot()) {
                throw StoreException.badRequest("cannot store data at the root path");
            }
            if (p.meta() != null && p.meta().byteSize() != p.blob().size()) {
                throw StoreException.badRequest("tensor " + p.meta() + " needs " + p.meta().byteSize() + " bytes, got "
                        + p.blob().size());
            }
            StorePath dir = path.parent();
            if (!dir.equals(lastDir)) {
                checkAncestors(tree, dir);
                lastDir = dir;
                lastDirNode = tree.lookup(dir);
            }
            Tree.Node existing = lastDirNode instanceof Tree.Dir d ? d.children.get(path.name()) : null;
            PutCheck.check(p, existing, lastDirNode, replace);
        }
    }

    private static void check(TensorStore.Put p, Tree.Node existing, Tree.Node dirNode, boolean replace) {
        StorePath path = p.path();
        if (p.meta() != null) {
            checkTensorName(path);
        }
        if (existing instanceof Tree.Dir) {
            throw StoreException.isADirectory(path + " is a directory");
        }
        if (existing != null && !replace) {
            throw StoreException.exists(path + " exists (send x-replace: true or ?replace=true to replace it)");
        }
        if (existing == null && dirNode instanceof Tree.Dir parent) {
            Tree.checkNotSidecarOfTensor(parent, path.name(), path);
            if (p.meta() != null && parent.children.containsKey(path.name() + Tree.SIDECAR)) {
                throw StoreException.exists(path + Tree.SIDECAR + " exists, so " + path
                        + " cannot be a tensor (its sidecar would collide)");
            }
        }
    }

    /** The longest name a tensor may have: its sidecar's, five bytes longer, is a path component too. */
    static final int MAX_TENSOR_NAME = 255 - Tree.SIDECAR.length();

    /** Bad request when the tensor at {@code path} has a name its sidecar could not be named after. */
    static void checkTensorName(StorePath path) {
        String name = path.name();
        if (name.length() > MAX_TENSOR_NAME / 3 && name.getBytes(StandardCharsets.UTF_8).length > MAX_TENSOR_NAME) {
            throw StoreException.badRequest("tensor name '" + name.substring(0, 16) + "...' is longer than "
                    + MAX_TENSOR_NAME + " bytes (its sidecar, " + Tree.SIDECAR + " after it, must fit in 255)");
        }
    }

    /**
     * The existing part of {@code dir} must be directories, and its first missing part must not be a
     * tensor's sidecar name.
     */
    static void checkAncestors(Tree tree, StorePath dir) {
        Tree.Node at = tree.root;
        List<String> parts = dir.parts();
        for (int i = 0; i < parts.size(); i++) {
            Tree.Node next = ((Tree.Dir) at).children.get(parts.get(i));
            if (next == null) {
                Tree.checkNotSidecarOfTensor((Tree.Dir) at, parts.get(i), upTo(dir, i));
                return;
            }
            if (next instanceof Tree.Data d) {
                throw StoreException.notADirectory(upTo(dir, i) + " is a " + d.type().jsonName() + ", not a directory");
            }
            at = next;
        }
    }

    /** The first {@code i + 1} components of {@code dir}. */
    private static StorePath upTo(StorePath dir, int i) {
        return StorePath.parse(String.join("/", dir.parts().subList(0, i + 1)));
    }

    /**
     * No path twice in one batch, none both data and the directory of another, and none that is the
     * sidecar name of a tensor of the batch (the checks against the tree see only what is there
     * already): linear in the batch (a tar upload of a state holds thousands of entries).
     */
    static void checkBatch(List<TensorStore.Put> batch) {
        Set<StorePath> paths = new HashSet<>();
        Set<StorePath> tensors = new HashSet<>();
        for (TensorStore.Put p : batch) {
            if (!paths.add(p.path())) {
                throw StoreException.conflict(p.path() + " appears twice in one upload");
            }
            if (p.meta() != null) {
                tensors.add(p.path());
            }
        }
        Set<StorePath> dirs = new HashSet<>();
        for (TensorStore.Put p : batch) {
            checkNotSidecarInBatch(tensors, p.path());
            for (StorePath d = p.path(); !d.isRoot(); ) {
                d = d.parent();
                if (!dirs.add(d)) {
                    break; // it and its ancestors were checked for an earlier put
                }
                if (paths.contains(d)) {
                    throw StoreException.notADirectory(d + " cannot be both data and a directory in one upload");
                }
                checkNotSidecarInBatch(tensors, d);
            }
        }
    }

    /** {@code p} (data or a directory) must not be {@code x.meta} where {@code x} is one of the batch's tensors. */
    private static void checkNotSidecarInBatch(Set<StorePath> tensors, StorePath p) {
        String n = p.name();
        if (tensors.isEmpty() || !n.endsWith(Tree.SIDECAR)) {
            return;
        }
        String owner = n.substring(0, n.length() - Tree.SIDECAR.length());
        if (!owner.isEmpty() && !owner.equals(".") && !owner.equals("..") && tensors.contains(p.parent().child(owner))) {
            throw StoreException.exists(p + " is the sidecar of tensor " + p.parent().child(owner)
                    + " of the same upload (read-only)");
        }
    }

    static boolean isAncestor(StorePath a, StorePath b) {
        return a.parts().size() < b.parts().size() && b.parts().subList(0, a.parts().size()).equals(a.parts());
    }
}
