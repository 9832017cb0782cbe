package io.tenplex.datasets.hdf5;

import io.jhdf.HdfFile;
import io.jhdf.api.Group;
import io.jhdf.api.Node;
import io.jhdf.exceptions.UnsupportedHdfException;
import io.jhdf.links.ExternalLink;
import io.jhdf.links.SoftLink;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * Finds the node an HDF5 path names, one link at a time (instead of jHDF's own lookup), so that a
 * path can never leave its file or loop: an external link on the way is refused (its target file
 * could lie outside the data roots, and jHDF would read it), soft links are followed within the
 * file, relative ones from the group that holds them, at most {@value #MAX_SOFT_LINKS} of them per
 * lookup (HDF5's own default limit), so that a loop is a clear refusal. Every refusal is an
 * {@link IllegalArgumentException} naming the array and the link.
 */
final class Hdf5Paths {
    /** The most soft links followed for one path (HDF5's default, {@code H5L_NUM_LINKS}). */
    static final int MAX_SOFT_LINKS = 16;

    private Hdf5Paths() {
    }

    /** The node {@code url}'s dataset path names in {@code file}, links resolved as above. */
    static Node find(ArrayUrl url, HdfFile file) {
        Deque<String> todo = new ArrayDeque<>(names(url.dataset()));
        Node at = file;
        String path = ""; // where {@code at} is, as the names walked so far spell it
        int soft = 0;
        while (!todo.isEmpty()) {
            String name = todo.poll();
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (!(at instanceof Group g)) {
                throw new IllegalArgumentException(url.what() + " does not exist (" + orRoot(path) + " is not a group)");
            }
            Node child = childNamed(g, name, url, path);
            String here = path + "/" + name;
            if (child == null) {
                throw new IllegalArgumentException(url.what() + " does not exist (no " + here + ")");
            }
            if (child instanceof ExternalLink e) {
                throw new IllegalArgumentException(url.what() + ": " + here + " is an external link to " + e.getTargetPath()
                        + "; external links are not followed (mount the target file's dataset by its own URL)");
            }
            if (child instanceof SoftLink s) {
                if (++soft > MAX_SOFT_LINKS) {
                    throw new IllegalArgumentException(url.what() + ": more than " + MAX_SOFT_LINKS + " soft links on the "
                            + "way (a loop?), the last " + here + " -> " + s.getTargetPath());
                }
                List<String> target = names(s.getTargetPath());
                for (int i = target.size() - 1; i >= 0; i--) {
                    todo.push(target.get(i));
                }
                if (s.getTargetPath().startsWith("/")) {
                    at = file;
                    path = "";
                }
                continue; // relative: from the group holding the link, where we are
            }
            at = child;
            path = here;
        }
        return at;
    }

    private static Node childNamed(Group g, String name, ArrayUrl url, String path) {
        try {
            return g.getChild(name);
        } catch (RuntimeException e) {
            throw unreadable(url, path, e);
        }
    }

    private static IllegalArgumentException unreadable(ArrayUrl url, String path, RuntimeException e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof UnsupportedHdfException u) {
                String why = u.getMessage() != null && u.getMessage().contains("External Data Files")
                        ? "holds a dataset with external storage (H5Pset_external: its bytes in other files), "
                        + "which is not served" : "holds an object that cannot be read (" + u.getMessage() + ")";
                return new IllegalArgumentException(url.what() + " cannot be opened: group " + orRoot(path) + " " + why
                        + ", so none of its members can be mounted");
            }
        }
        return new IllegalArgumentException(url.what() + " cannot be opened: group " + orRoot(path) + " cannot be read ("
                + e.getClass().getSimpleName() + ")");
    }

    private static String orRoot(String path) {
        return path.isEmpty() ? "/" : path;
    }

    private static List<String> names(String path) {
        return List.of(path.split("/"));
    }
}
