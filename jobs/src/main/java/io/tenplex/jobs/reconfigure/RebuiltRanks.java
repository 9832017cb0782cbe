package io.tenplex.jobs.reconfigure;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.store.StorePath;
import io.tenplex.transform.AwaitedRanks;
import io.tenplex.transform.ShardSource;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The old ranks of a part still being rebuilt from parity ({@link PlanPart#rebuilding()}), tensor by
 * tensor: on its source device's daemon, every {@value #POLL_MILLIS} ms until the timeout, each
 * rank's replica manifest ({@code <sourceDir>/manifests/<rank>.json}, published after the whole
 * rebuilt tree) and, while it is absent, the list of its tensors streamed so far
 * ({@link JobLayout#streamedList}). A tensor is readable once listed (from the streamed tree) or once
 * its rank is published (from the rank's tree); reads wait per tensor ({@link AwaitedRanks}), an
 * aborted part fails them.
 */
final class RebuiltRanks implements AwaitedRanks.Readiness {
    static final long POLL_MILLIS = 100;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Map<Integer, StreamedKeys> ranks = new TreeMap<>();

    RebuiltRanks(PlanPart part, DaemonClient client, Map<Integer, InetSocketAddress> daemons,
            ScheduledExecutorService timer, Duration timeout) {
        this(part.rebuilding().stream().collect(java.util.stream.Collectors.toMap(r -> r,
                r -> part.sourceDevices().get(r).worker(), (a, b) -> a, TreeMap::new)), part.paths(), client, daemons,
                timer, timeout);
    }

    /** @param workers per rank being rebuilt, the worker it is rebuilt on; {@code paths}: its source directory */
    RebuiltRanks(Map<Integer, Integer> workers, JobLayout paths, DaemonClient client,
            Map<Integer, InetSocketAddress> daemons, ScheduledExecutorService timer, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        workers.forEach((rank, worker) -> {
            StreamedKeys keys = new StreamedKeys();
            ranks.put(rank, keys);
            InetSocketAddress daemon = daemons.get(worker);
            if (daemon == null) {
                keys.failed(new IOException("rank " + rank + " is rebuilt on worker " + worker
                        + ", which has no daemon address"));
                return;
            }
            StorePath manifest = paths.source().child("manifests").child(rank + ".json");
            new Poll(keys, client, daemon, manifest, paths.streamedList(rank), rank, deadline, timer, timeout).ask();
        });
    }

    /** The ranks being rebuilt. */
    Set<Integer> ranks() {
        return ranks.keySet();
    }

    @Override
    public CompletableFuture<Boolean> ready(int rank, String key) {
        StreamedKeys keys = ranks.get(rank);
        return keys == null ? CompletableFuture.completedFuture(false) : keys.key(key);
    }

    /**
     * {@code source}, its reads of a rank being rebuilt waiting until the tensor read is streamed (then
     * read through {@code early}) or the rank published.
     */
    ShardSource around(ShardSource source, ShardSource early, Duration timeout) {
        return ranks.isEmpty() ? source : new AwaitedRanks(source, early, ranks.keySet(), this, timeout);
    }

    /** Waits until all of {@code rank} is published when it is being rebuilt. */
    void await(int rank, Duration timeout) throws IOException, InterruptedException {
        StreamedKeys keys = ranks.get(rank);
        if (keys == null) {
            return;
        }
        try {
            keys.whole().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IOException("rank " + rank + " did not become readable: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("rank " + rank + " did not become readable within " + timeout.toSeconds() + " s");
        }
    }

    /** Fails every wait not over yet (the part was aborted). */
    void cancel(String why) {
        ranks.values().forEach(k -> k.failed(new IOException(why)));
    }

    private record Poll(StreamedKeys keys, DaemonClient client, InetSocketAddress daemon, StorePath manifest,
            StorePath list, int rank, long deadline, ScheduledExecutorService timer, Duration timeout) {
        void ask() {
            if (keys.whole().isDone()) {
                return;
            }
            client.readValue(daemon, manifest).whenComplete((v, t) -> {
                if (t == null) {
                    keys.published();
                } else if (System.nanoTime() - deadline > 0) {
                    keys.failed(new IOException("rank " + rank + " was not published at " + manifest
                            + " on " + daemon + " within " + timeout.toSeconds() + " s"));
                } else {
                    client.readValue(daemon, list).whenComplete((l, u) -> {
                        if (u == null) {
                            streamed(l.bytes());
                        }
                        again();
                    });
                }
            });
        }

        private void streamed(byte[] json) {
            try {
                keys.streamed(Arrays.asList(JSON.readValue(json, String[].class)));
            } catch (IOException | RuntimeException e) {
                // a list being replaced, or none yet: asked again
            }
        }

        private void again() {
            try {
                timer.schedule(this::ask, POLL_MILLIS, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                keys.failed(new IOException("the daemon is stopping", e));
            }
        }
    }
}
