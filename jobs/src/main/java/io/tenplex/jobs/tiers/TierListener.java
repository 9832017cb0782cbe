package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.store.TensorStore;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * What a checkpoint level that follows completed generations needs (the store, the generations,
 * the other daemons and their range reads, a background executor, the cluster, this daemon's worker
 * and the pace), and how it runs its work off the generations' lock.
 */
abstract class TierListener implements Generations.Listener {
    protected final TensorStore store;
    protected final Generations generations;
    protected final DaemonClient client;
    protected final RangeReads reads;
    protected final Executor background;
    protected final Supplier<Map<Integer, InetSocketAddress>> daemons;
    protected final Supplier<OptionalInt> self;
    protected final LongSupplier pace;

    /**
     * @param daemons the cluster's daemons by worker (the daemon's {@code --peers})
     * @param self this daemon's worker number, when it is among them
     * @param pace bytes/s a level may take from another daemon (0: not paced)
     */
    TierListener(TensorStore store, Generations generations, DaemonClient client, RangeReads reads,
            Executor background, Supplier<Map<Integer, InetSocketAddress>> daemons, Supplier<OptionalInt> self,
            LongSupplier pace) {
        this.store = store;
        this.generations = generations;
        this.client = client;
        this.reads = reads;
        this.background = background;
        this.daemons = daemons;
        this.self = self;
        this.pace = pace;
    }

    /** Runs {@code work} on the background executor; its result or failure (logged) completes {@code done}. */
    protected void inBackground(Logger log, String what, String job, long step, CompletableFuture<Long> done,
            Callable<Long> work) {
        background.execute(() -> {
            try {
                done.complete(work.call());
            } catch (Exception e) {
                if (store.stat(new JobLayout(job).generation(step)).isEmpty()) {
                    log.info("job={} step={} {} stopped: the generation was dropped (a newer one completed)", job,
                            step, what);
                } else {
                    log.warn("job={} step={} {} failed: {}", job, step, what, e.getMessage());
                }
                done.completeExceptionally(e);
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
        });
    }
}
