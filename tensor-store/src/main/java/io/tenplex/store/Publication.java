package io.tenplex.store;

import io.tenplex.store.memory.Blob;
import java.util.List;

/**
 * Puts checked entries into the tree all or none. Every step is recorded before the next, so that anything thrown
 * part-way (an {@link Error} such as {@link OutOfMemoryError} included), or a tree left with more nodes than its
 * heap has room for, takes away the directories made on the way and puts back what each step replaced: the tree,
 * its accounting and every blob's ownership are as they were. The undo allocates nothing: it only puts back or
 * removes keys that are already in their maps.
 */
final class Publication {
    private final Tree tree;
    private final Tree.Dir[] dirs;
    private final Tree.Node[] replaced;
    private final Tree.Data[] added;
    /** Per entry, the directories its step made (none when it shares its predecessor's parent). */
    private final Tree.Made[] made;
    private int done;

    /** The records are allocated here, before the tree is touched (a step's {@link Tree.Made} before its step). */
    Publication(Tree tree, int entries) {
        this.tree = tree;
        this.dirs = new Tree.Dir[entries];
        this.replaced = new Tree.Node[entries];
        this.added = new Tree.Data[entries];
        this.made = new Tree.Made[entries];
    }

    /**
     * Publishes {@code puts} (already checked); the blobs of entries they replaced go to {@code toRelease}.
     * On a throw the tree is as before and {@code toRelease} holds nothing of this publication.
     *
     * @throws StoreException insufficient storage when the tree would hold more nodes than its heap has room for
     */
    void publish(List<TensorStore.Put> puts, List<Blob> toRelease) {
        int releasedBefore = toRelease.size();
        long nodesBefore = tree.nodes;
        try {
            StorePath lastDir = null;
            Tree.Dir dir = null;
            for (TensorStore.Put p : puts) {
                if (!p.path().parent().equals(lastDir)) {
                    lastDir = p.path().parent();
                    made[done] = new Tree.Made(); // before the tree changes
                    dir = tree.mkdirs(lastDir, made[done]);
                }
                step(p, dir);
                if (replaced[done - 1] instanceof Tree.Data d) {
                    toRelease.add(d.blob);
                }
            }
            if (tree.nodes > tree.maxNodes && tree.nodes > nodesBefore) { // counted by making them: undone below
                throw tree.noRoom(tree.nodes - nodesBefore, nodesBefore, "publishing " + puts.size() + " entries");
            }
        } catch (Throwable t) {
            undo(puts);
            toRelease.subList(releasedBefore, toRelease.size()).clear();
            throw t;
        }
    }

    /** A step counts its node last: one that throws is put back by {@link #undo} without counting. */
    private void step(TensorStore.Put p, Tree.Dir dir) {
        Tree.Data data = new Tree.Data(p.meta(), p.blob(), p.sums());
        dirs[done] = dir;
        added[done] = data;
        replaced[done] = dir.children.put(p.path().name(), data);
        Tree.Node old = replaced[done];
        tree.account(added[done], +1); // arithmetic only: the step is whole once counted
        if (old instanceof Tree.Data d) {
            tree.account(d, -1);
        } else {
            tree.nodes++;
        }
        done++;
    }

    private void undo(List<TensorStore.Put> puts) {
        if (done < puts.size() && added[done] != null) { // the step that threw, if its put went in (not counted)
            String name = puts.get(done).path().name();
            if (dirs[done].children.get(name) == added[done]) {
                if (replaced[done] == null) {
                    dirs[done].children.remove(name);
                } else {
                    dirs[done].children.put(name, replaced[done]);
                }
            }
        }
        for (int i = Math.min(done, puts.size() - 1); i >= 0; i--) {
            if (i < done) {
                undoStep(i, puts.get(i).path().name());
            }
            Tree.Made m = made[i];
            if (m != null && m.parent != null) { // the chain of directories this step's mkdirs made, now empty again
                m.parent.children.remove(m.name); // (when the first one's put threw, it may be there uncounted)
                tree.nodes -= m.count;
            }
        }
    }

    private void undoStep(int i, String name) {
        if (replaced[i] == null) {
            dirs[i].children.remove(name);
            tree.nodes--;
        } else {
            dirs[i].children.put(name, replaced[i]);
        }
        tree.account(added[i], -1);
        if (replaced[i] instanceof Tree.Data d) {
            tree.account(d, +1);
        }
    }
}
