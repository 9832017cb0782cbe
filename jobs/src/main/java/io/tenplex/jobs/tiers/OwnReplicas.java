package io.tenplex.jobs.tiers;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.Entry;
import io.tenplex.store.StoreException;
import io.tenplex.store.TensorStore;

/** A daemon's own rank trees of a generation in its replica tree: snapshots (bytes shared), with their manifests. */
final class OwnReplicas {
    private OwnReplicas() {
    }

    static synchronized void keep(TensorStore store, JobLayout paths, long step) {
        for (Entry e : store.list(paths.generation(step), false)) {
            String name = e.name();
            if (name.isEmpty() || name.length() > 9 || !name.chars().allMatch(Character::isDigit)) {
                continue;
            }
            int rank = Integer.parseInt(name);
            if (store.stat(paths.replicaManifest(step, rank)).isPresent()) {
                continue;
            }
            try {
                store.delete(paths.replica(step, rank));
            } catch (StoreException gone) {
                // nothing left from an earlier try
            }
            store.mkdirs(paths.replicas(step).child("manifests"));
            store.snapshot(e.path(), paths.replica(step, rank));
            store.link(paths.sealManifest(step, rank), paths.replicaManifest(step, rank), true);
        }
    }
}
