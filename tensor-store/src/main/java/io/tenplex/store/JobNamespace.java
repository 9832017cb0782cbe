package io.tenplex.store;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Where jobs sit in a daemon's namespace: each job's tree is {@code /job/<job>}. The one place that
 * knows the top level; what lies inside a job's tree is the job lifecycle's {@code JobLayout} (saves,
 * generations, staging, load) and the dataset views' (their entries).
 */
public final class JobNamespace {
    /** The directory that holds every job's tree. */
    public static final String ROOT = "/job";

    private JobNamespace() {
    }

    /** The rule for a job's name, as errors and docs/API.md state it. */
    public static final String NAME_RULE = "a job name is 1 to 255 bytes of UTF-8 without '/' or NUL, and is not "
            + "'.' or '..'";
    /** The most characters of a bad name an error quotes. */
    private static final int QUOTED = 64;

    /**
     * What is wrong with {@code job} as a job's name ({@link #NAME_RULE}: exactly one path component
     * below {@code /job}), or null when it is a valid name.
     */
    public static String nameProblem(String job) {
        if (job == null || job.isEmpty()) {
            return "it is empty";
        }
        if (job.equals(".") || job.equals("..")) {
            return "'" + job + "' names a directory relative to another";
        }
        if (job.indexOf('/') >= 0) {
            return "it contains '/'";
        }
        if (job.indexOf('\0') >= 0) {
            return "it contains a NUL byte";
        }
        int bytes = job.getBytes(StandardCharsets.UTF_8).length;
        return bytes > 255 ? "it is " + bytes + " bytes long" : null;
    }

    /**
     * Checks a job's name where it enters (a route, a command) and wherever a job's tree is named.
     *
     * @return {@code job}
     * @throws StoreException bad request (400) saying what is wrong with it
     */
    public static String requireValidName(String job) {
        String problem = nameProblem(job);
        if (problem != null) {
            throw StoreException.badRequest("bad job name '" + quoted(job) + "': " + problem + " (" + NAME_RULE + ")");
        }
        return job;
    }

    /** A name as an error quotes it: control characters escaped, at most {@link #QUOTED} characters. */
    private static String quoted(String job) {
        if (job == null) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        job.codePoints().limit(QUOTED).forEach(c -> {
            if (c < 0x20 || c == 0x7f) {
                b.append(String.format(java.util.Locale.ROOT, "\\x%02x", c));
            } else {
                b.appendCodePoint(c);
            }
        });
        return job.codePointCount(0, job.length()) > QUOTED ? b + "..." : b.toString();
    }

    /**
     * The job's tree {@code /job/<job>}: always exactly one component below {@code /job}.
     *
     * @throws StoreException bad request for a name that is not valid ({@link #requireValidName})
     */
    public static StorePath root(String job) {
        StorePath root = StorePath.parse(ROOT + "/" + requireValidName(job));
        if (root.parts().size() != 2) {
            throw new IllegalStateException("job " + job + " resolved to " + root + ", not one directory below " + ROOT);
        }
        return root;
    }

    /** {@code relative} (e.g. {@code head.txt}, {@code save/0}) inside the job's tree. */
    public static StorePath path(String job, String relative) {
        return StorePath.parse(root(job) + "/" + relative);
    }

    /** The job a path (as text) lies in, and the rest of it ({@code ""} for the job's tree itself). */
    public static Optional<Located> locate(String path) {
        if (!path.startsWith(ROOT + "/")) {
            return Optional.empty();
        }
        String rest = path.substring(ROOT.length() + 1);
        int slash = rest.indexOf('/');
        return rest.isEmpty() ? Optional.empty()
                : Optional.of(new Located(slash < 0 ? rest : rest.substring(0, slash), slash < 0 ? "" : rest.substring(slash + 1)));
    }

    /** A path located in a job's tree: the job and the path relative to its tree. */
    public record Located(String job, String relative) {
    }
}
