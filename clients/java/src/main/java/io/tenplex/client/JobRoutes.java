package io.tenplex.client;

/**
 * The job paths and routes the client uses, as the daemon lays them out (its {@code JobLayout};
 * {@code JobRoutesTest} checks they agree): a rank's saved tree in the store and the job API.
 */
final class JobRoutes {
    private final String job;

    JobRoutes(String job) {
        if (job == null || job.isEmpty() || job.contains("/") || job.equals(".") || job.equals("..")
                || job.indexOf('\0') >= 0 || job.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 255) {
            throw new IllegalArgumentException("job name '" + job + "' cannot be a name in the store (a job name is 1 "
                    + "to 255 bytes of UTF-8 without '/' or NUL, and is not '.' or '..')");
        }
        this.job = job;
    }

    /** A rank's saved tree: {@code /job/<job>/save/<rank>}. */
    String savedRank(int rank) {
        return "/job/" + job + "/save/" + rank;
    }

    private String api(String route) {
        return "/api/v1/jobs/" + java.net.URLEncoder.encode(job, java.nio.charset.StandardCharsets.UTF_8)
                .replace("+", "%20") + route;
    }

    /** Seals one rank's save of a step. */
    String saveRank(long step, int rank) {
        return api("/saves/" + step + "/ranks/" + rank);
    }

    /** What a rank loads, as the daemon chooses it. */
    String load(int rank) {
        return api("/load/" + rank);
    }

    /** The stop flag. */
    String stop() {
        return api("/stop");
    }
}
