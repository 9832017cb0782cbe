package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.CheckpointLayout;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.Shape;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.transform.Piece;
import io.tenplex.transform.ShardPlan;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.BiFunction;

/**
 * The old ranks a recovery still rebuilds from parity on the coordinator's daemon while the
 * redistribution runs: per rank its seal manifest (what its tree will hold, CRC32C checked when it
 * is published), a future completed with the level it was published from (parity, or its lost
 * worker's durable copy when solving failed; exceptionally when no level could serve it), and how
 * a rank's origin reads for a level ({@code origin.apply(rank, level)}, as the status shows it),
 * and {@code release}, run once the change has committed or aborted: the trees the rebuild streamed
 * tensors into (read before their rank was published) are no longer read and go.
 */
public record Rebuilding(Map<Integer, SealManifest> manifests, Map<Integer, CompletableFuture<String>> ranks,
        BiFunction<Integer, String, String> origin, Runnable release) {
    public static final Rebuilding NONE = new Rebuilding(Map.of(), Map.of(), (rank, level) -> level);
    /** How long the commit waits for the ranks after the parts prepared (as long as a part waits for a piece). */
    static final java.time.Duration TIMEOUT = java.time.Duration.ofMinutes(10);

    public Rebuilding {
        manifests = Map.copyOf(manifests);
        ranks = Map.copyOf(ranks);
    }

    /** Ranks whose rebuild streams nothing the change must give back. */
    public Rebuilding(Map<Integer, SealManifest> manifests, Map<Integer, CompletableFuture<String>> ranks,
            BiFunction<Integer, String, String> origin) {
        this(manifests, ranks, origin, () -> { });
    }

    /** Per rank, its origin as published: call once {@link #await} returned. */
    Map<Integer, String> origins() {
        Map<Integer, String> out = new java.util.TreeMap<>();
        ranks.forEach((rank, f) -> out.put(rank, origin.apply(rank, f.join())));
        return out;
    }

    /** The ranks being rebuilt. */
    public Set<Integer> pending() {
        return ranks.keySet();
    }

    /** Completes when every rank is published; exceptionally with the first failure. */
    CompletableFuture<Void> all() {
        return CompletableFuture.allOf(ranks.values().toArray(CompletableFuture[]::new));
    }

    /** Runs {@code then} with the reason once the rebuild fails (at once when it has). */
    void onFailure(java.util.function.Consumer<String> then) {
        all().whenComplete((v, e) -> {
            if (e != null) {
                then.accept("rebuilding from parity failed: " + cause(e).getMessage());
            }
        });
    }

    /** The part naming the ranks being rebuilt that it reads (its pieces, their replicas, its values). */
    PlanPart readBy(PlanPart p) {
        return readBy(p, ranks.keySet());
    }

    /** The part naming which of {@code rebuilt} (old ranks rebuilt from parity) it reads. */
    static PlanPart readBy(PlanPart p, Set<Integer> rebuilt) {
        if (rebuilt.isEmpty()) {
            return p;
        }
        Set<Integer> read = new TreeSet<>();
        for (ShardPlan s : p.shards()) {
            for (Piece x : s.pieces()) {
                read.add(x.sourceRank());
                for (int r : x.replicas()) {
                    read.add(r);
                }
            }
        }
        p.values().forEach(v -> read.add(v.sourceRank()));
        read.retainAll(rebuilt);
        return p.withRebuilding(List.copyOf(read));
    }

    private static Throwable cause(Throwable e) {
        return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /**
     * Waits until every rank is published, at most {@code timeout}; whether there was any.
     *
     * @throws IOException naming the failure of the rebuild, or saying it did not end in time
     */
    boolean await(java.time.Duration timeout) throws IOException, InterruptedException {
        if (ranks.isEmpty()) {
            return false;
        }
        try {
            all().get(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            Throwable c = cause(e.getCause());
            throw new IOException("rebuilding from parity failed: " + c.getMessage(), c);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("ranks " + ranks.keySet() + " were not rebuilt from parity within "
                    + timeout.toSeconds() + " s");
        }
    }

    /** {@code listed} (the other ranks' saved trees) with the trees of the ranks being rebuilt. */
    Map<Integer, CheckpointLayout> withPending(Map<Integer, CheckpointLayout> listed) {
        Map<Integer, CheckpointLayout> out = new java.util.TreeMap<>(listed);
        manifests.forEach((rank, m) -> out.put(rank, layout(m)));
        return out;
    }

    /**
     * The saved tree a rank's published rebuild will hold, from its seal manifest (as a listing of
     * it would give it): its tensors with dtype and shape, and its files.
     */
    static CheckpointLayout layout(SealManifest m) {
        List<CheckpointLayout.Item> items = new ArrayList<>();
        m.tensors().forEach((path, t) -> {
            long[] dims = t.shape().stream().mapToLong(Long::longValue).toArray();
            items.add(new CheckpointLayout.Item(path, true, dims.length,
                    new TensorMeta(DType.fromName(t.dtype()), Shape.of(dims))));
        });
        m.files().keySet().forEach(path -> items.add(new CheckpointLayout.Item(path, false, 0)));
        return CheckpointLayout.of(items);
    }
}
