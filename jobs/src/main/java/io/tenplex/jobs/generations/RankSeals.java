package io.tenplex.jobs.generations;

import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.io.IOException;

/**
 * Sealing one rank's saved tree into a generation on this daemon: the tree snapshotted (bytes shared,
 * later writes do not show through; an absent one sealed as empty) with a manifest of per-tensor
 * checksums, or, for a rank sealed already, the check that a retry seals the same state.
 */
final class RankSeals {
    /** Its log lines are the generations' (as before). */
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Generations.class);

    private final TensorStore store;
    private final GenerationFiles files;

    RankSeals(TensorStore store, GenerationFiles files) {
        this.store = store;
        this.files = files;
    }

    /**
     * Seals {@code rank} of the save of {@code step} ({@code p}, checked) from the tree at {@code saved}.
     *
     * @return the manifest
     * @throws StoreException conflict when the generation is complete without this rank here, or when the
     *     rank sealed a different state into this step
     */
    SealManifest seal(String job, long step, int rank, int world, GenerationProgress p, StorePath saved)
            throws IOException {
        StorePath target = Generations.generationDir(job, step).child(Integer.toString(rank));
        StorePath manifest = GenerationFiles.manifest(job, step, rank);
        if (store.stat(target).isEmpty()) {
            if (p.complete) {
                throw StoreException.conflict("generation " + step + " of job " + job + " is complete; rank " + rank
                        + " cannot be sealed into it again");
            }
            if (store.stat(saved).isPresent()) {
                store.snapshot(saved, target);
            } else {
                store.mkdirs(target);
            }
            SealManifest m = SealManifests.of(store, target, rank, step);
            files.writeManifest(manifest, m);
            LOG.info("generation sealed job={} step={} rank={} world={} bytes={}", job, step, rank, world, m.bytes());
            return m;
        }
        SealManifest sealed = SealManifests.read(store, manifest, job, step, rank);
        SealManifests.checkSameState(store, job, step, rank, sealed, saved);
        return sealed;
    }
}
