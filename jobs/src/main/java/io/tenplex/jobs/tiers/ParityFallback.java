package io.tenplex.jobs.tiers;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.SmallFiles;
import io.tenplex.jobs.generations.SealManifest;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ranks of a parity rebuild that failed once under way, read from another level instead
 * ({@link RebuildFallback}, the lost worker's durable copy): per lost worker, the ranks not
 * published yet are read into the replica tree, each compared with its seal manifest (every tensor's
 * dtype, shape, size and CRC32C, every file's size and CRC32C, nothing more, nothing less), and only
 * then published (its replica manifest written last). A rank no level serves is failed with both
 * reasons and its tree removed, so no replica manifest ever names bytes that were not checked.
 */
final class ParityFallback {
    private static final Logger LOG = LoggerFactory.getLogger(ParityFallback.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private final TensorStore store;
    private final JobLayout paths;
    private final long step;
    private final RebuildFallback fallback;

    ParityFallback(TensorStore store, JobLayout paths, long step, RebuildFallback fallback) {
        this.store = store;
        this.paths = paths;
        this.step = step;
        this.fallback = fallback;
    }

    /** Serves every rank of {@code p} not published yet, per lost worker, after the rebuild failed with {@code failed}. */
    void serve(ErasureRebuild.Pending p, Map<Integer, List<Integer>> ranksByWorker, Throwable failed) {
        String parity = failed.getMessage() == null ? failed.toString() : failed.getMessage();
        for (Map.Entry<Integer, List<Integer>> e : ranksByWorker.entrySet()) {
            Set<Integer> ranks = new TreeSet<>();
            for (int r : e.getValue()) {
                if (!p.ranks().get(r).isDone()) {
                    ranks.add(r);
                }
            }
            if (ranks.isEmpty()) {
                continue;
            }
            if (fallback == RebuildFallback.NONE) {
                fail(p, ranks, failed);
                continue;
            }
            LOG.warn("generation {}: rebuilding ranks {} of lost worker {} from parity failed ({}); reading its durable copy",
                    step, ranks, e.getKey(), parity);
            try {
                read(p, e.getKey(), ranks);
                ranks.forEach(r -> p.ranks().get(r).complete(ErasureRebuild.DURABLE));
            } catch (IOException | RuntimeException x) {
                ranks.forEach(this::removeTree);
                fail(p, ranks, new IOException(parity + "; nor read from the durable copy of worker " + e.getKey()
                        + ": " + x.getMessage(), failed));
            }
        }
    }

    /** Reads {@code ranks} of {@code worker} through the fallback, checks each against its seal, publishes it. */
    private void read(ErasureRebuild.Pending p, int worker, Set<Integer> ranks) throws IOException {
        ranks.forEach(this::removeTree); // a tree left from before (or half of this rebuild's) is not mixed in
        if (!fallback.read(worker, ranks)) {
            throw new IOException("no durable directory this daemon reads holds ranks " + ranks + " of generation "
                    + step);
        }
        for (int r : ranks) {
            SealManifest sealed = p.manifests().get(r);
            String problem = problem(sealed, SealManifest.describe(store, paths.replica(step, r), r, step));
            if (problem != null) {
                throw new IOException("rank " + r + " of generation " + step + " there is not what was sealed: "
                        + problem);
            }
        }
        for (int r : ranks) {
            store.mkdirs(paths.replicas(step).child("manifests"));
            SmallFiles.put(store, paths.replicaManifest(step, r), JSON.writeValueAsBytes(p.manifests().get(r)));
        }
    }

    /** What differs between the sealed tree and the one read, or null. */
    static String problem(SealManifest sealed, SealManifest read) {
        String t = differ("tensor", sealed.tensors(), read.tensors(), true);
        return t != null ? t : differ("file", sealed.files(), read.files(), false);
    }

    private static String differ(String what, Map<String, SealManifest.Item> sealed, Map<String, SealManifest.Item> read,
            boolean tensor) {
        if (!sealed.keySet().equals(read.keySet())) {
            Set<String> missing = new TreeSet<>(sealed.keySet());
            missing.removeAll(read.keySet());
            Set<String> extra = new TreeSet<>(read.keySet());
            extra.removeAll(sealed.keySet());
            return what + "s missing " + missing + ", not sealed " + extra;
        }
        for (Map.Entry<String, SealManifest.Item> e : sealed.entrySet()) {
            SealManifest.Item s = e.getValue();
            SealManifest.Item r = read.get(e.getKey());
            boolean same = s.size() == r.size() && (s.crc32c() == null || s.crc32c().equals(r.crc32c()))
                    && (!tensor || Objects.equals(s.dtype(), r.dtype()) && Objects.equals(s.shape(), r.shape()));
            if (!same) {
                return what + " " + e.getKey() + " was sealed as " + s + ", read " + r;
            }
        }
        return null;
    }

    private static void fail(ErasureRebuild.Pending p, Set<Integer> ranks, Throwable why) {
        ranks.forEach(r -> p.ranks().get(r).completeExceptionally(why));
    }

    private void removeTree(int rank) {
        for (StorePath x : List.of(paths.replicaManifest(step, rank), paths.replica(step, rank),
                paths.replicas(step).child(rank + ".incoming"))) {
            try {
                store.delete(x);
            } catch (StoreException absent) {
                // not there
            }
        }
    }
}
