package io.tenplex.daemon;

import io.tenplex.adapters.ResourceChanges;
import io.tenplex.adapters.rendezvous.Rendezvous;
import io.tenplex.datasets.DatasetService;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.datasets.streams.StreamService;
import io.tenplex.jobs.JobRemoval;
import io.tenplex.jobs.shared.SharedSaves;
import io.tenplex.jobs.durable.DurableTier;
import io.tenplex.store.StoreException;

/**
 * Wires {@code tenplex rm}: what each component keeps of a job outside its tree (durable files,
 * streams, dataset mounts, rehearsal buffers, shared-memory handouts, the torchrun rendezvous, finished
 * resource changes) is
 * removed with it, and a running resource change refuses the removal.
 */
final class JobRemovals {
    private JobRemovals() {
    }

    /** @param durable null without a checkpoint directory; @param shared null without shared memory */
    static JobRemoval wire(JobRemoval removal, ResourceChanges changes, DurableTier durable, StreamService streams,
            DatasetService datasets, RehearsalService rehearsal, SharedSaves shared, Rendezvous rendezvous) {
        removal.addBusyCheck(job -> changes.of(job).stream().filter(c -> c.finishedAt() == 0).findFirst()
                .map(c -> "resource change " + c.id() + " of job " + job + " is running (" + c.describe().state() + ")")
                .orElse(null));
        if (durable != null) {
            removal.add("durable", job -> {
                long bytes = durable.remove(job);
                return bytes > 0 ? bytes + " bytes of durable files in " + durable.directory() : null;
            });
        }
        removal.add("streams", job -> {
            if (!exists(() -> streams.config(job))) {
                return null;
            }
            streams.deleteLocal(job);
            return "stream dropped";
        });
        removal.add("datasets", job -> exists(() -> {
            datasets.unmount(job);
            return null;
        }) ? "dataset view unmounted" : null);
        removal.add("rehearsal", job -> rehearsal.drop(job) ? "rehearsal buffer dropped" : null);
        if (shared != null) {
            removal.add("shared memory", job -> {
                int n = 0;
                for (SharedSaves.Handout h : shared.describe(job)) { // one its owner ended meanwhile is gone
                    n += exists(() -> {
                        shared.release(job, h.id());
                        return null;
                    }) ? 1 : 0;
                }
                return n > 0 ? n + " shared-memory handouts ended" : null;
            });
        }
        removal.add("rendezvous", job -> rendezvous.forget(job) ? "torchrun rendezvous forgotten" : null);
        removal.add("resource changes", job -> {
            changes.forget(job);
            return null;
        });
        return removal;
    }

    /** Whether {@code what} found the job's (false when it answered not found). */
    private static boolean exists(java.util.function.Supplier<?> what) {
        try {
            what.get();
            return true;
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }
}
