package io.tenplex.jobs.reconfigure;

/**
 * TEST ONLY: a failure point between the commits of a reconfiguration. With the system property
 * {@code tenplex.test.haltAfterCommits=N} the coordinating daemon halts (exit status 86, like a
 * killed process: no shutdown hooks) once N commits have answered (0: before the first), so tests
 * can kill the coordinator between commits deterministically. Unset (always, outside tests), it does
 * nothing.
 */
final class CommitHook {
    static final String PROPERTY = "tenplex.test.haltAfterCommits";
    private static final int HALT_AFTER = Integer.getInteger(PROPERTY, -1);

    private CommitHook() {
    }

    /** Called when {@code commits} commits have answered. */
    static void reached(int commits) {
        if (HALT_AFTER >= 0 && commits == HALT_AFTER) {
            Runtime.getRuntime().halt(86);
        }
    }
}
