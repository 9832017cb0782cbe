package io.tenplex.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.jobs.common.Broadcast;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Sealed;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Sealing a rank of a save across the cluster: sealed in this daemon's generations first, then told to
 * every other daemon of the cluster; the answer lists the failures of the daemons that hold the save's ranks
 * (a daemon of another worker, e.g. a lost one, that does not answer is only logged).
 */
final class SaveSealing {
    private final TensorStore store;
    private final Generations generations;
    private final DaemonClient client;
    private final ClusterDefaults cluster;
    private final RankActivity activity;
    private final SavedShardCheck shards;

    SaveSealing(TensorStore store, Generations generations, DaemonClient client, ClusterDefaults cluster,
            RankActivity activity) {
        this.store = store;
        this.generations = generations;
        this.client = client;
        this.cluster = cluster;
        this.activity = activity;
        this.shards = new SavedShardCheck(store);
    }

    /**
     * The daemons of {@code cluster} but this one: it recorded the seal already, and a notice to itself
     * could arrive after a removal of the job and complete a generation whose tree the removal took.
     */
    private Map<Integer, InetSocketAddress> others(Map<Integer, InetSocketAddress> all) {
        java.util.OptionalInt self = SelfWorker.find(cluster.selfAddress(), all);
        if (self.isEmpty()) {
            return all;
        }
        Map<Integer, InetSocketAddress> others = new java.util.TreeMap<>(all);
        others.remove(self.getAsInt());
        return others;
    }

    /**
     * Refuses (conflict) to seal the tree at {@code saved} when it does not hold the {@code entries}
     * tensors and files the rank wrote there: a removal of the job (or another writer) took them
     * between the rank's uploads and its seal, and sealing what is left would list as complete a
     * generation that does not hold what was saved.
     */
    void checkEntries(String job, long step, int rank, StorePath saved, int entries) {
        int held = store.stat(saved).isPresent() ? store.walk(saved, false).size() : 0;
        if (held != entries) {
            throw StoreException.conflict("rank " + rank + " of job " + job + " wrote " + entries + " entries below "
                    + saved + " for step " + step + ", but it holds " + held + " now (the job was removed, tenplex rm, "
                    + "or the tree changed while the rank saved); nothing was sealed: save again");
        }
    }

    /**
     * Seals {@code rank} of the save of {@code step} from the tree at {@code saved}, then tells {@code daemons};
     * a tree that contradicts the model spec stored with the job is refused first, nothing sealed
     * ({@link SavedShardCheck}).
     */
    CompletableFuture<Sealed> seal(String job, long step, int rank, int world, JsonNode config,
            Map<Integer, InetSocketAddress> daemons, StorePath saved) throws IOException {
        shards.check(job, rank, config, saved);
        long t = System.nanoTime();
        SealManifest manifest = generations.seal(job, step, rank, world, config, saved);
        activity.saved(job, step);
        boolean complete = generations.sealed(job, step, List.of(rank), world, config);
        SaveEvents.sealed(job, step, rank, manifest.bytes(), System.nanoTime() - t);
        int tensors = manifest.tensors().size();
        long bytes = manifest.bytes();
        Map<Integer, InetSocketAddress> all = cluster.daemons(daemons);
        List<Integer> holders = io.tenplex.jobs.tiers.Ring.of(config, world, all.keySet()).workers();
        return Broadcast.toAll(others(all), a -> client.sealed(a, job, step, List.of(rank), world, config))
                .thenApply(failed -> new Sealed(step, rank, world, tensors, bytes,
                        complete || generations.current(job).orElse(-1) == step, Broadcast.ofWorkers(failed, holders)));
    }
}
