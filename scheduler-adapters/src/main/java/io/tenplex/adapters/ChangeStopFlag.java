package io.tenplex.adapters;

import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.StopFlags;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A resource change's stop flag: raised here and at the change's other daemons, cleared at all of
 * them when the change ends; the daemons that did not take it are told in the change's events.
 */
final class ChangeStopFlag {
    private final String job;
    private final Jobs jobs;
    private final StopFlags flags;
    private final Map<Integer, InetSocketAddress> daemons;
    private final Consumer<String> event;
    private CompletableFuture<List<String>> remoteRaise = CompletableFuture.completedFuture(List.of());

    ChangeStopFlag(String job, Jobs jobs, Map<Integer, InetSocketAddress> daemons, Consumer<String> event) {
        this.job = job;
        this.jobs = jobs;
        this.flags = jobs.stopFlags();
        this.daemons = daemons;
        this.event = event;
    }

    /** Raises the flag here, and starts raising it at the other daemons. */
    void raise(OptionalLong atStep, String reason) {
        flags.raise(job, atStep, reason);
        remoteRaise = jobs.setRemoteFlags(job, daemons, atStep, reason);
    }

    /** Waits for the other daemons to have raised the flag, telling those that did not. */
    void raisedRemotely() {
        reportRemote("raised", remoteRaise);
    }

    /** Clears the flag here and at the other daemons. */
    void clear() {
        flags.clear(job);
        reportRemote("cleared", jobs.setRemoteFlags(job, daemons, OptionalLong.empty(), null));
    }

    private void reportRemote(String what, CompletableFuture<List<String>> done) {
        List<String> failed;
        try {
            failed = done.get(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (Exception e) {
            failed = List.of(e.toString());
        }
        if (!failed.isEmpty()) {
            event.accept("stop flag not " + what + " on: " + String.join("; ", failed));
        }
    }
}
