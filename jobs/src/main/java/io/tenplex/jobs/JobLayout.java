package io.tenplex.jobs;

import io.tenplex.store.StorePath;

/** Where a job's shards live in a daemon's namespace. */
public record JobLayout(String job, String sourceDir, String outputDir) {
    /** Where the job API lives on every daemon: {@code /api/v1/jobs/<job>/...}. */
    public static final String API_PREFIX = "/api/v1/jobs/";

    public JobLayout(String job) {
        this(job, "save", "load");
    }

    public JobLayout {
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

    /** A rank's saved tree: {@code /job/<job>/<sourceDir>/<rank>}. */
    public StorePath savedRank(int rank) {
        return StorePath.parse("/job/" + job + "/" + sourceDir + "/" + rank);
    }

    /** A plan's staging tree: {@code /job/<job>/staging/<plan>}. */
    public StorePath staging(String plan) {
        return StorePath.parse("/job/" + job + "/staging/" + plan);
    }

    /** What training loads: {@code /job/<job>/load}. */
    public StorePath load() {
        return StorePath.parse("/job/" + job + "/load");
    }

    /** The step the loaded state was saved at: {@code /job/<job>/iter}. */
    public StorePath iter() {
        return StorePath.parse("/job/" + job + "/iter");
    }

    /** The model spec stored with the job: {@code /job/<job>/model.json}. */
    public StorePath modelSpec() {
        return StorePath.parse("/job/" + job + "/model.json");
    }

    /** The para-config table stored with the job: {@code /job/<job>/para-config.json}. */
    public StorePath paraConfig() {
        return StorePath.parse("/job/" + job + "/para-config.json");
    }

    /** Every sealed generation of the job: {@code /job/<job>/generations}. */
    public StorePath generations() {
        return StorePath.parse("/job/" + job + "/" + Generations.DIR);
    }

    /** A generation's directory: {@code /job/<job>/generations/<step>}. */
    public StorePath generation(long step) {
        return generations().child(Long.toString(step));
    }

    /** The file naming the job's current complete generation: {@code /job/<job>/generation}. */
    public StorePath currentGeneration() {
        return StorePath.parse("/job/" + job + "/generation");
    }
}
