package io.tenplex.adapters.rendezvous;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.ResourceChanges;
import io.tenplex.jobs.Jobs;
import java.util.function.Consumer;

/** What the rendezvous asks of the daemon's jobs: their generations, their ranks' activity, resource changes. */
public interface RendezvousJobs {
    /** A resource change the rendezvous started. */
    interface Change {
        String id();

        /** Whether it ended (committed, failed or cancelled). */
        boolean finished();

        /** Why it did not commit (null: it committed, or it runs). */
        String error();

        /** The configuration it chose ({@code tp}, {@code pp}, {@code dp}), once chosen; else null. */
        JsonNode config();
    }

    /** The job's current complete generation: its world and configuration. */
    record Current(long step, int world, JsonNode config) {
    }

    /**
     * Starts a resource change with this request body (docs/API.md, {@code POST .../resources}).
     *
     * @throws RuntimeException refused (the reason is the message): nothing was raised
     */
    Change start(String job, ObjectNode body);

    /** When a rank of the job last read its stop flag ({@link System#nanoTime()}; 0: never since the daemon started). */
    long lastStopRead(String job);

    /** The most steps a rank of the job said it finished or saved (-1: none said since the daemon started). */
    long highestStep(String job);

    /** The job's current complete generation, or null. */
    Current current(String job);

    /** Makes the job known here (its tree under {@code /job}), as {@code tenplex run} does when it starts. */
    void makeKnown(String job);

    /** The daemon's own jobs and resource changes; {@code mkdirs} makes {@code /job/<job>}. */
    static RendezvousJobs of(Jobs jobs, ResourceChanges changes, Consumer<String> mkdirs) {
        return new DaemonJobs(jobs, changes, mkdirs);
    }
}
