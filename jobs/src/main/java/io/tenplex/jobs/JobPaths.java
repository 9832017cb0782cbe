package io.tenplex.jobs;

import io.tenplex.store.StorePath;

/** Where a job's shards live in a daemon's namespace. */
public record JobPaths(String job, String sourceDir, String outputDir) {
    /** Where the job API lives on every daemon: {@code /api/v1/jobs/<job>/...}. */
    public static final String API_PREFIX = "/api/v1/jobs/";

    public JobPaths(String job) {
        this(job, "save", "load");
    }

    public JobPaths {
        StorePath.parse("/job/" + job); // validates the name
        if (job.contains("/")) {
            throw new IllegalArgumentException("job name '" + job + "' must not contain '/'");
        }
    }

    /** A saved shard: {@code /job/<job>/save/<rank>/<key>} (or below another source directory). */
    public StorePath saved(int rank, String key) {
        return StorePath.parse("/job/" + job + "/" + sourceDir + "/" + rank + "/" + key);
    }

    /** A transformed shard while staged: {@code /job/<job>/staging/<plan>/load/<rank>/<key>}. */
    public StorePath staged(String plan, int rank, String key) {
        return StorePath.parse("/job/" + job + "/staging/" + plan + "/" + outputDir + "/" + rank + "/" + key);
    }
}
