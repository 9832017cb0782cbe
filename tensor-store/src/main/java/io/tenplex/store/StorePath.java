package io.tenplex.store;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A validated absolute path in the namespace. Parsing follows the wire protocol: split on {@code /},
 * empty components dropped ({@code job/x} and {@code /job/x/} are the same path). Components
 * {@code .} and {@code ..}, NUL bytes, names over 255 bytes and paths of more than {@link #MAX_DEPTH}
 * components are rejected.
 */
public final class StorePath {
    /**
     * The most components a path may have: as many as a path of {@code PATH_MAX} (4096) bytes can hold, so every
     * stored path can be named through the FUSE mount. The bound also keeps every walk of the tree (delete, list,
     * copy) far from the thread's stack limit.
     */
    public static final int MAX_DEPTH = 2048;
    private static final StorePath ROOT = new StorePath(List.of());
    private final List<String> parts;
    private int hash; // 0: not computed yet (a path's list hash is recomputed at most once)

    private StorePath(List<String> parts) {
        this.parts = parts;
    }

    public static StorePath root() {
        return ROOT;
    }

    /** @throws StoreException (bad request) naming the offending component */
    public static StorePath parse(String text) {
        if (text == null) {
            throw StoreException.badRequest("missing path");
        }
        List<String> out = new ArrayList<>();
        int from = 0;
        int n = text.length();
        while (from <= n) {
            int slash = text.indexOf('/', from);
            int end = slash < 0 ? n : slash;
            if (end > from) {
                out.add(component(text.substring(from, end), () -> text));
                if (out.size() > MAX_DEPTH) {
                    throw tooDeep(text.substring(0, Math.min(64, text.length())));
                }
            }
            from = end + 1;
        }
        return out.isEmpty() ? ROOT : new StorePath(List.copyOf(out));
    }

    /** {@code p}, a non-empty component (of the path {@code whole} names) without a slash, when it is allowed. */
    private static String component(String p, Supplier<String> whole) {
        if (p.equals(".") || p.equals("..")) {
            throw StoreException.badRequest("path '" + whole.get() + "' contains '" + p + "' (relative components are not allowed)");
        }
        if (p.indexOf('\0') >= 0) {
            throw StoreException.badRequest("path '" + whole.get().replace("\0", "\\0") + "' contains a NUL byte");
        }
        if (p.length() > 255 / 3 && p.getBytes(StandardCharsets.UTF_8).length > 255) {
            throw StoreException.badRequest("path component '" + p.substring(0, 16) + "...' is longer than 255 bytes");
        }
        return p;
    }

    private static StoreException tooDeep(String start) {
        return StoreException.badRequest("path '" + start + "...' has more than " + MAX_DEPTH
                + " components (a path of at most 4096 bytes holds no more)");
    }

    public boolean isRoot() {
        return parts.isEmpty();
    }

    public List<String> parts() {
        return parts;
    }

    /** The last component; empty for the root. */
    public String name() {
        return parts.isEmpty() ? "" : parts.get(parts.size() - 1);
    }

    public StorePath parent() {
        return parts.size() <= 1 ? ROOT : new StorePath(parts.subList(0, parts.size() - 1));
    }

    public StorePath child(String name) {
        if (name.isEmpty() || name.indexOf('/') >= 0) {
            List<String> p = new ArrayList<>(parts);
            p.add(name);
            return parse(String.join("/", p)); // as a path of several components (or none)
        }
        if (parts.size() >= MAX_DEPTH) {
            throw tooDeep(toString().substring(0, 64));
        }
        String[] p = parts.toArray(new String[parts.size() + 1]);
        p[parts.size()] = component(name, () -> (isRoot() ? "" : toString()) + "/" + name);
        return new StorePath(List.of(p));
    }

    /** {@code other} resolved below this path. */
    public StorePath resolve(StorePath other) {
        if (parts.size() + other.parts.size() > MAX_DEPTH) {
            throw tooDeep((this + other.toString()).substring(0, 64));
        }
        List<String> p = new ArrayList<>(parts);
        p.addAll(other.parts);
        return new StorePath(List.copyOf(p));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StorePath s && parts.equals(s.parts);
    }

    @Override
    public int hashCode() {
        int h = hash;
        if (h == 0) {
            h = parts.hashCode();
            hash = h;
        }
        return h;
    }

    /** Absolute form, e.g. {@code /job/x/iter}; {@code /} for the root. */
    @Override
    public String toString() {
        return parts.isEmpty() ? "/" : "/" + String.join("/", parts);
    }
}
