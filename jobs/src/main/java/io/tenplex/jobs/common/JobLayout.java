package io.tenplex.jobs.common;

import io.tenplex.store.JobNamespace;
import io.tenplex.store.StorePath;

/**
 * Every path of a job: in a daemon's namespace ({@code /job/<job>/...}: saved ranks, generations,
 * staging, {@code load}, control files) and on the wire ({@code /api/v1/jobs/<job>/...}). Nothing
 * else builds these strings.
 *
 * @param sourceDir where old shards are read, relative to the job ({@code save}, a generation, a staging tree)
 * @param outputDir the staged tree below {@code staging/<plan>/} ({@code load}, or {@code central})
 */
public record JobLayout(String job, String sourceDir, String outputDir) {
    /** The directory (relative to the job) that holds the sealed generations. */
    public static final String GENERATIONS = "generations";

    /** The source directory (relative to the job) of a generation's rank trees. */
    public static String generationSource(long step) {
        return GENERATIONS + "/" + step;
    }

    /** Where the job API lives on every daemon: {@code /api/v1/jobs/<job>/...}. */
    public static final String API_PREFIX = "/api/v1/jobs/";

    public JobLayout(String job) {
        this(job, "save", "load");
    }

    public JobLayout {
        JobNamespace.root(job); // validates the name
    }

    private StorePath path(String relative) {
        return JobNamespace.path(job, relative);
    }

    /** The job's tree: {@code /job/<job>}. */
    public StorePath root() {
        return JobNamespace.root(job);
    }

    /** Where old shards are read: {@code /job/<job>/<sourceDir>}. */
    public StorePath source() {
        return path(sourceDir);
    }

    /** A saved shard: {@code /job/<job>/save/<rank>/<key>} (or below another source directory). */
    public StorePath saved(int rank, String key) {
        return path(sourceDir + "/" + rank + "/" + key);
    }

    /**
     * A tensor of a rank being rebuilt, put there as soon as it is solved and checked, before the rest
     * of its rank: {@code /job/<job>/<sourceDir>/<rank>.streamed/<key>}.
     */
    public StorePath streamed(int rank, String key) {
        return path(sourceDir + "/" + rank + ".streamed/" + key);
    }

    /** The tensors of a rank streamed so far: {@code /job/<job>/<sourceDir>/<rank>.streamed}. */
    public StorePath streamedRank(int rank) {
        return path(sourceDir + "/" + rank + ".streamed");
    }

    /**
     * The keys of a rank's tensors streamed so far, a JSON array rewritten after each one (next to
     * the replica manifests): {@code /job/<job>/<sourceDir>/manifests/<rank>.streamed.json}.
     */
    public StorePath streamedList(int rank) {
        return path(sourceDir + "/manifests/" + rank + ".streamed.json");
    }

    /** A rank's saved tree: {@code /job/<job>/<sourceDir>/<rank>}. */
    public StorePath savedRank(int rank) {
        return path(sourceDir + "/" + rank);
    }

    /** A transformed shard while staged: {@code /job/<job>/staging/<plan>/load/<rank>/<key>}. */
    public StorePath staged(String plan, int rank, String key) {
        return path("staging/" + plan + "/" + outputDir + "/" + rank + "/" + key);
    }

    /** A plan's staging tree: {@code /job/<job>/staging/<plan>}. */
    public StorePath staging(String plan) {
        return path("staging/" + plan);
    }

    /** What training loads: {@code /job/<job>/load}. */
    public StorePath load() {
        return path("load");
    }

    /** A rank's loaded tree: {@code /job/<job>/load/<rank>}. */
    public StorePath loadRank(int rank) {
        return path("load/" + rank);
    }

    /** A loaded shard: {@code /job/<job>/load/<rank>/<key>}. */
    public StorePath loaded(int rank, String key) {
        return path("load/" + rank + "/" + key);
    }

    /** The step the loaded state was saved at: {@code /job/<job>/iter}. */
    public StorePath iter() {
        return path("iter");
    }

    /** The model spec stored with the job: {@code /job/<job>/model.json}. */
    public StorePath modelSpec() {
        return path("model.json");
    }

    /** The partition rules stored with the job, from which its model is inferred: {@code /job/<job>/rules.json}. */
    public StorePath rules() {
        return path("rules.json");
    }

    /** The para-config table stored with the job: {@code /job/<job>/para-config.json}. */
    public StorePath paraConfig() {
        return path("para-config.json");
    }

    /** Where the Kubernetes adapter publishes its worker assignment: {@code /job/<job>/kubernetes/assignment.json}. */
    public StorePath kubernetesAssignment() {
        return path("kubernetes/assignment.json");
    }

    /** Every sealed generation of the job: {@code /job/<job>/generations}. */
    public StorePath generations() {
        return path(GENERATIONS);
    }

    /**
     * The step a generation's directory name stands for: the decimal {@link Long#toString} writes, 0 to
     * {@link Long#MAX_VALUE} (19 digits, e.g. a step from {@code time.time_ns()}); empty for any other name
     * (leading zeros, signs, more than fits in a long).
     */
    public static java.util.OptionalLong step(String name) {
        if (name.isEmpty() || name.length() > 19 || !name.chars().allMatch(c -> c >= '0' && c <= '9')
                || (name.length() > 1 && name.charAt(0) == '0')) {
            return java.util.OptionalLong.empty();
        }
        try {
            return java.util.OptionalLong.of(Long.parseLong(name));
        } catch (NumberFormatException e) {
            return java.util.OptionalLong.empty(); // 19 digits above 2^63-1
        }
    }

    /** A generation's directory: {@code /job/<job>/generations/<step>}. */
    public StorePath generation(long step) {
        return path(generationSource(step));
    }

    /** Where a daemon keeps the rank trees of a generation it can recover from: {@code replicas/<step>} (relative). */
    public static String replicasDir(long step) {
        return "replicas/" + step;
    }

    /**
     * The rank trees of generation {@code step} this daemon can serve when a worker is lost (L2):
     * {@code /job/<job>/replicas/<step>}, holding snapshots of its own ranks and copies of its
     * partners' ranks, each {@code <rank>/} tree complete once {@code manifests/<rank>.json} is there.
     */
    public StorePath replicas(long step) {
        return path(replicasDir(step));
    }

    /** A rank's replica tree: {@code /job/<job>/replicas/<step>/<rank>}. */
    public StorePath replica(long step, int rank) {
        return path(replicasDir(step) + "/" + rank);
    }

    /** The manifest of a complete replica: {@code /job/<job>/replicas/<step>/manifests/<rank>.json}. */
    public StorePath replicaManifest(long step, int rank) {
        return path(replicasDir(step) + "/manifests/" + rank + ".json");
    }

    /**
     * L3: what a daemon keeps for group {@code group} of generation {@code step}:
     * {@code /job/<job>/parity/<step>/<group>/} with parity blocks {@code <j>} (u8 tensors), the
     * members' seal manifests {@code manifests/<rank>.json}, and {@code members.json} (written last).
     */
    public StorePath parity(long step, int group) {
        return path("parity/" + step + "/" + group);
    }

    /** Every parity tree of a generation: {@code /job/<job>/parity/<step>}. */
    public StorePath parities(long step) {
        return path("parity/" + step);
    }

    /** A sealed rank's manifest: {@code /job/<job>/generations/<step>/manifests/<rank>.json}. */
    public StorePath sealManifest(long step, int rank) {
        return path(generationSource(step) + "/manifests/" + rank + ".json");
    }

    /**
     * Why {@code path} may be written or deleted only by the daemon, or empty when a client may: a job's
     * sealed generations ({@code /job/<job>/generations} and everything below it) and the file naming
     * its current one ({@code /job/<job>/generation}). A sealed generation never changes; the REST
     * routes answer a write or delete there with 409, as they do for a tensor's {@code .meta} sidecar.
     */
    public static java.util.Optional<String> daemonOwned(StorePath path) {
        return JobNamespace.locate(path.toString()).map(l -> {
            String r = l.relative();
            if (r.equals(CURRENT)) {
                return path + " names job " + l.job() + "'s current generation and is written by the daemon only "
                        + "(seal a save to change it)";
            }
            if (r.equals(GENERATIONS) || r.startsWith(GENERATIONS + "/")) {
                return path + " is part of job " + l.job() + "'s sealed generations, which never change (save and "
                        + "seal a newer step instead)";
            }
            return null;
        });
    }

    private static final String CURRENT = "generation";

    /** The file naming the job's current complete generation: {@code /job/<job>/generation}. */
    public StorePath currentGeneration() {
        return path(CURRENT);
    }

    /**
     * The job's API: {@code /api/v1/jobs/<job>} followed by {@code route} (e.g. {@code "/parts"}), the
     * name percent-encoded as one path segment, so that the daemon asked decodes the same name (a
     * {@code %}, {@code ?}, {@code #} or space in it stays part of it).
     */
    public String api(String route) {
        return API_PREFIX + java.net.URLEncoder.encode(job, java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20")
                + route;
    }

    /** A plan part's route on a worker's daemon, with an action ({@code ""}, {@code "/prepare"}, ...). */
    public String apiPart(String planId, String action) {
        return api("/parts/" + planId + action);
    }

    /** A reconfiguration's status route on its coordinator. */
    public String apiReconfiguration(String id) {
        return api("/reconfigurations/" + id);
    }

    /** A resource change's status route. */
    public String apiResourceChange(String id) {
        return api("/resources/" + id);
    }

    /** The stop flag's route: {@code /api/v1/jobs/<job>/stop}. */
    public String apiStop() {
        return api("/stop");
    }

    /** The reconfigure route, with {@code ?dryRun=true} when only a plan is asked for. */
    public String apiReconfigure(boolean dryRun) {
        return api("/reconfigure" + (dryRun ? "?dryRun=true" : ""));
    }

    /** Where resource changes are posted: {@code /api/v1/jobs/<job>/resources}. */
    public String apiResources() {
        return api("/resources");
    }

    /** Seals one rank's save of a step: {@code /api/v1/jobs/<job>/saves/<step>/ranks/<rank>}. */
    public String apiSaveRank(long step, int rank) {
        return api("/saves/" + step + "/ranks/" + rank);
    }

    /** What a rank loads, as the daemon chooses it: {@code /api/v1/jobs/<job>/load/<rank>}. */
    public String apiLoad(int rank) {
        return api("/load/" + rank);
    }
}
