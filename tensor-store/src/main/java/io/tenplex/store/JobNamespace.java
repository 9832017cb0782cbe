package io.tenplex.store;

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

    /** The job's tree {@code /job/<job>}; a job name is one path component. */
    public static StorePath root(String job) {
        if (job.contains("/")) {
            throw new IllegalArgumentException("job name '" + job + "' must not contain '/'");
        }
        return StorePath.parse(ROOT + "/" + job);
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
