package io.tenplex.adapters.rendezvous;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.adapters.ResourceChange;
import io.tenplex.adapters.ResourceChanges;
import io.tenplex.jobs.Jobs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.OptionalLong;
import java.util.function.Consumer;

/** {@link RendezvousJobs} of this daemon: its jobs facade and its resource changes. */
final class DaemonJobs implements RendezvousJobs {
    private final Jobs jobs;
    private final ResourceChanges changes;
    private final Consumer<String> mkdirs;

    DaemonJobs(Jobs jobs, ResourceChanges changes, Consumer<String> mkdirs) {
        this.jobs = jobs;
        this.changes = changes;
        this.mkdirs = mkdirs;
    }

    /** A change started through {@link ResourceChanges}. */
    private record Started(ResourceChange c) implements Change {
        @Override
        public String id() {
            return c.id();
        }

        @Override
        public boolean finished() {
            return c.finished().isDone();
        }

        @Override
        public String error() {
            ResourceChange.State s = c.state();
            if (s == ResourceChange.State.DONE || !finished()) {
                return null;
            }
            String e = c.describe().error();
            return "resource change " + c.id() + " " + s.name().toLowerCase(java.util.Locale.ROOT)
                    + (e == null ? "" : ": " + e);
        }

        @Override
        public JsonNode config() {
            return c.describe().config();
        }
    }

    @Override
    public Change start(String job, ObjectNode body) {
        return new Started(changes.start(job, body));
    }

    @Override
    public long lastStopRead(String job) {
        return jobs.stopFlags().activity().of(job).map(s -> s.lastReadNanos()).orElse(0L);
    }

    @Override
    public long highestStep(String job) {
        return jobs.stopFlags().activity().of(job).map(s -> s.highestStep()).orElse(-1L);
    }

    @Override
    public Current current(String job) {
        OptionalLong g = jobs.generations().current(job);
        if (g.isEmpty()) {
            return null;
        }
        try {
            long step = g.getAsLong();
            return new Current(step, jobs.generations().world(job, step), jobs.generations().config(job, step));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void makeKnown(String job) {
        mkdirs.accept(job);
    }
}
