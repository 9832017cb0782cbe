package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.store.StorePath;
import io.tenplex.transform.AwaitedRanks;
import io.tenplex.transform.ShardSource;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The old ranks of a part still being rebuilt from parity ({@link PlanPart#rebuilding()}): each is
 * ready once its replica manifest ({@code <sourceDir>/manifests/<rank>.json}, published after the
 * whole rebuilt tree) answers on its source device's daemon, asked every {@value #POLL_MILLIS} ms
 * until the timeout. Reads of a rank wait for it ({@link AwaitedRanks}); an aborted part fails them.
 */
final class RebuiltRanks {
    static final long POLL_MILLIS = 100;
    private final Map<Integer, CompletableFuture<?>> ready = new TreeMap<>();

    RebuiltRanks(PlanPart part, DaemonClient client, Map<Integer, InetSocketAddress> daemons,
            ScheduledExecutorService timer, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int rank : part.rebuilding()) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            ready.put(rank, f);
            int worker = part.sourceDevices().get(rank).worker();
            InetSocketAddress daemon = daemons.get(worker);
            if (daemon == null) {
                f.completeExceptionally(new IOException("rank " + rank + " is rebuilt on worker " + worker
                        + ", which has no daemon address"));
                continue;
            }
            StorePath manifest = part.paths().source().child("manifests").child(rank + ".json");
            new Poll(f, client, daemon, manifest, rank, deadline, timer, timeout).ask();
        }
    }

    /** The ranks being rebuilt. */
    Set<Integer> ranks() {
        return ready.keySet();
    }

    /** {@code source}, its reads of a rank being rebuilt waiting until it is published. */
    ShardSource around(ShardSource source, Duration timeout) {
        return ready.isEmpty() ? source : new AwaitedRanks(source, ready, timeout);
    }

    /** Waits until {@code rank} is published when it is being rebuilt. */
    void await(int rank, Duration timeout) throws IOException, InterruptedException {
        CompletableFuture<?> f = ready.get(rank);
        if (f == null) {
            return;
        }
        try {
            f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IOException("rank " + rank + " did not become readable: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("rank " + rank + " did not become readable within " + timeout.toSeconds() + " s");
        }
    }

    /** Fails every wait not over yet (the part was aborted). */
    void cancel(String why) {
        ready.forEach((rank, f) -> f.completeExceptionally(new IOException(why)));
    }

    private record Poll(CompletableFuture<Void> f, DaemonClient client, InetSocketAddress daemon, StorePath manifest,
            int rank, long deadline, ScheduledExecutorService timer, Duration timeout) {
        void ask() {
            if (f.isDone()) {
                return;
            }
            client.readValue(daemon, manifest).whenComplete((v, t) -> {
                if (t == null) {
                    f.complete(null);
                } else if (System.nanoTime() - deadline > 0) {
                    f.completeExceptionally(new IOException("rank " + rank + " was not published at " + manifest
                            + " on " + daemon + " within " + timeout.toSeconds() + " s"));
                } else {
                    try {
                        timer.schedule(this::ask, POLL_MILLIS, TimeUnit.MILLISECONDS);
                    } catch (RejectedExecutionException e) {
                        f.completeExceptionally(new IOException("the daemon is stopping", e));
                    }
                }
            });
        }
    }
}
