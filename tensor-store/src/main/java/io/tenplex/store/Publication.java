package io.tenplex.store;

import io.tenplex.store.memory.Blob;
import java.util.List;

/**
 * Puts checked entries into the tree all or none. Every step is recorded before the next, so that anything thrown
 * part-way (an {@link Error} such as {@link OutOfMemoryError} included) puts back what each step replaced and leaves
 * the tree, its accounting and every blob's ownership as they were (directories made on the way stay, empty). The
 * undo allocates nothing: it only puts back or removes keys that are already in their maps.
 */
final class Publication {
    private final Tree tree;
    private final Tree.Dir[] dirs;
    private final Tree.Node[] replaced;
    private final Tree.Data[] added;
    private int done;

    /** The records are allocated here, before the tree is touched. */
    Publication(Tree tree, int entries) {
        this.tree = tree;
        this.dirs = new Tree.Dir[entries];
        this.replaced = new Tree.Node[entries];
        this.added = new Tree.Data[entries];
    }

    /**
     * Publishes {@code puts} (already checked); the blobs of entries they replaced go to {@code toRelease}.
     * On a throw the tree is as before and {@code toRelease} holds nothing of this publication.
     */
    void publish(List<TensorStore.Put> puts, List<Blob> toRelease) {
        int releasedBefore = toRelease.size();
        try {
            StorePath lastDir = null;
            Tree.Dir dir = null;
            for (TensorStore.Put p : puts) {
                if (!p.path().parent().equals(lastDir)) {
                    lastDir = p.path().parent();
                    dir = tree.mkdirs(lastDir);
                }
                dirs[done] = dir;
                added[done] = new Tree.Data(p.meta(), p.blob(), p.sums());
                replaced[done] = dir.children.put(p.path().name(), added[done]);
                Tree.Node old = replaced[done];
                tree.account(added[done], +1); // arithmetic only: the step is whole once counted
                if (old instanceof Tree.Data d) {
                    tree.account(d, -1);
                }
                done++;
                if (old instanceof Tree.Data d) {
                    toRelease.add(d.blob);
                }
            }
        } catch (Throwable t) {
            undo(puts);
            toRelease.subList(releasedBefore, toRelease.size()).clear();
            throw t;
        }
    }

    private void undo(List<TensorStore.Put> puts) {
        if (done < puts.size() && dirs[done] != null) { // the step that threw, if its put went in: a new key
            String name = puts.get(done).path().name();
            if (dirs[done].children.get(name) == added[done]) {
                dirs[done].children.remove(name);
            }
        }
        for (int i = done - 1; i >= 0; i--) {
            String name = puts.get(i).path().name();
            if (replaced[i] == null) {
                dirs[i].children.remove(name);
            } else {
                dirs[i].children.put(name, replaced[i]);
            }
            tree.account(added[i], -1);
            if (replaced[i] instanceof Tree.Data d) {
                tree.account(d, +1);
            }
        }
    }
}
