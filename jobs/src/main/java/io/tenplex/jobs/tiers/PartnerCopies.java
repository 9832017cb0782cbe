package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.RangeReads;
import io.tenplex.jobs.generations.Generations;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.jobs.generations.Tiers;
import io.tenplex.store.Entry;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * L2, partner copies: when a generation of a job with {@code partners = n} completes, this daemon
 * (worker {@code w}) pulls the rank trees of the {@code n} workers before it in the job's {@link Ring}
 * (those whose partners include {@code w}) into {@code /job/<job>/replicas/<step>/}, in the background
 * and paced, and snapshots its own rank trees there (bytes shared). When all are in place the
 * generation has reached {@link Tiers#PARTNERS} on this daemon. Replicas are dropped with their
 * generation. A recovery reads a lost worker's ranks from the replica trees of its partners.
 */
public final class PartnerCopies extends TierListener {
    /** The share of a worker's link that background copies may use (the rest is left to training). */
    public static final double LINK_SHARE = 0.5;
    private static final Logger LOG = LoggerFactory.getLogger(PartnerCopies.class);
    private static final Duration TIMEOUT = Duration.ofMinutes(10);

    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, CompletableFuture<Long>> copies = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Void>> drops = new ConcurrentHashMap<>();

    /**
     * @param daemons the cluster's daemons by worker (the daemon's {@code --peers})
     * @param self this daemon's worker number, when it is among them
     * @param pace bytes/s a copy may take from its holder (0: not paced)
     */
    public PartnerCopies(TensorStore store, Generations generations, DaemonClient client, RangeReads reads,
            Executor background, Supplier<Map<Integer, InetSocketAddress>> daemons, Supplier<OptionalInt> self,
            LongSupplier pace) {
        super(store, generations, client, reads, background, daemons, self, pace);
    }

    @Override
    public void completed(String job, long step) {
        int n = generations.tiers().settings(job).partners();
        if (n == 0) {
            return;
        }
        CompletableFuture<Long> done = copied(job, step);
        inBackground(LOG, "partner copies", job, step, done, () -> copy(job, step, n));
    }

    @Override
    public void dropped(String job, long step) {
        copies.remove(key(job, step));
        CompletableFuture<Void> done = drops.computeIfAbsent(key(job, step), k -> new CompletableFuture<>());
        background.execute(() -> {
            deleteIfThere(new JobLayout(job).replicas(step));
            drops.remove(key(job, step));
            done.complete(null);
        });
    }

    /** Completes once the copies of a dropped generation are gone (at once when none is being dropped). */
    public CompletableFuture<Void> dropping(String job, long step) {
        return drops.getOrDefault(key(job, step), CompletableFuture.completedFuture(null));
    }

    /** Completes with the bytes copied here once this daemon's copies of the generation are in place. */
    public CompletableFuture<Long> copied(String job, long step) {
        return copies.computeIfAbsent(key(job, step), k -> new CompletableFuture<>());
    }

    private static String key(String job, long step) {
        return job + "@" + step;
    }

    private long copy(String job, long step, int n) throws IOException, InterruptedException {
        long t = System.nanoTime();
        JobLayout paths = new JobLayout(job);
        int me = self.get().orElseThrow(() -> new IOException("this daemon is not among --peers: it has no worker "
                + "number, so no partners"));
        Map<Integer, InetSocketAddress> cluster = daemons.get();
        Ring ring = Ring.of(generations.config(job, step), generations.world(job, step), cluster.keySet());
        if (!ring.workers().contains(me)) {
            return 0; // the generation has no ranks on this worker
        }
        OwnReplicas.keep(store, paths, step);
        long bytes = 0;
        RankCopy rankCopy = new RankCopy(store, client, reads, TIMEOUT, pace.getAsLong());
        for (int holder : ring.holdersFor(me, n)) {
            InetSocketAddress a = cluster.get(holder);
            if (a == null) {
                throw new IOException("no daemon address for worker " + holder);
            }
            bytes += copyFrom(rankCopy, a, paths, step);
        }
        if (store.stat(paths.generation(step)).isEmpty()) { // dropped while copying
            deleteIfThere(paths.replicas(step));
            return bytes;
        }
        generations.tiers().reached(job, step, Tiers.PARTNERS);
        LOG.info("job={} step={} partner copies of workers {} in place: bytes={} ms={}", job, step,
                ring.holdersFor(me, n), bytes, (System.nanoTime() - t) / 1_000_000);
        return bytes;
    }

    /** Copies every rank sealed on {@code holder} that is not here yet; the bytes copied. */
    private long copyFrom(RankCopy rankCopy, InetSocketAddress holder, JobLayout paths, long step)
            throws IOException, InterruptedException {
        StorePath manifests = paths.generation(step).child("manifests");
        long bytes = 0;
        for (DaemonClient.TreeEntry e : await(client.listTree(holder, manifests), manifests)) {
            String name = e.path().substring(e.path().lastIndexOf('/') + 1);
            if (!name.endsWith(".json") || !numeric(name.substring(0, name.length() - 5))) {
                continue;
            }
            int rank = Integer.parseInt(name.substring(0, name.length() - 5));
            if (store.stat(paths.replicaManifest(step, rank)).isPresent()) {
                continue; // already here (this daemon's own rank, or copied before)
            }
            byte[] manifest = await(client.readValue(holder, paths.sealManifest(step, rank)), manifests).bytes();
            bytes += rankCopy.copy(holder, paths, step, json.readValue(manifest, SealManifest.class), manifest);
        }
        return bytes;
    }

    private static <T> T await(CompletableFuture<T> call, StorePath what) throws IOException, InterruptedException {
        try {
            return call.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IOException(what + ": " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new IOException(what + ": no answer within " + TIMEOUT.toSeconds() + " s");
        }
    }

    private void deleteIfThere(StorePath p) {
        try {
            store.delete(p);
        } catch (StoreException e) {
            if (e.kind() != StoreException.Kind.NOT_FOUND) {
                LOG.warn("dropping {}: {}", p, e.getMessage());
            }
        }
    }

    private static boolean numeric(String name) {
        return !name.isEmpty() && name.length() < 10 && name.chars().allMatch(Character::isDigit);
    }
}
