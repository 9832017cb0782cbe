package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Broadcast;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.store.StorePath;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Sealing a rank of a save across the cluster: sealed in this daemon's generations first, then told to
 * every daemon of the cluster; the answer lists the failures of the daemons that hold the save's ranks
 * (a daemon of another worker, e.g. a lost one, that does not answer is only logged).
 */
final class SaveSealing {
    private final Generations generations;
    private final DaemonClient client;
    private final ClusterDefaults cluster;

    SaveSealing(Generations generations, DaemonClient client, ClusterDefaults cluster) {
        this.generations = generations;
        this.client = client;
        this.cluster = cluster;
    }

    /** Seals {@code rank} of the save of {@code step} from the tree at {@code saved}, then tells {@code daemons}. */
    CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, StorePath saved) throws IOException {
        long t = System.nanoTime();
        SealManifest manifest = generations.seal(job, step, rank, world, config, saved);
        boolean complete = generations.sealed(job, step, List.of(rank), world, config);
        SaveEvents.sealed(job, step, rank, manifest.bytes(), System.nanoTime() - t);
        int tensors = manifest.tensors().size();
        long bytes = manifest.bytes();
        Map<Integer, InetSocketAddress> told = cluster.daemons(daemons);
        List<Integer> holders = io.tenplex.jobs.tiers.Ring.of(config, world, told.keySet()).workers();
        return Broadcast.toAll(told, a -> client.sealed(a, job, step, List.of(rank), world, config))
                .thenApply(failed -> new Sealed(step, rank, world, tensors, bytes,
                        complete || generations.current(job).orElse(-1) == step, Broadcast.ofWorkers(failed, holders)));
    }
}
