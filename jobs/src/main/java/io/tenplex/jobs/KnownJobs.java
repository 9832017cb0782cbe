package io.tenplex.jobs;

import io.tenplex.jobs.generations.Generations;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.JobNamespace;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Which jobs a daemon knows: those with a tree under {@code /job} (made by a first save, a stored
 * model, or {@code PUT /api/v1/dirs/job/<job>}), those with saves on record (sealed on another
 * daemon and told here), those with a lost generation on record (a restart that found every durable
 * copy damaged: {@code GET .../generations} reports the losses) and those whose stop flag a peer has
 * raised here.
 * Routes that act on an existing job refuse the others with 404 and the known names, so a typo in a
 * job's name is an error instead of a change that waits forever.
 */
final class KnownJobs {
    /** The most names an error lists. */
    static final int MAX_LISTED = 20;

    private KnownJobs() {
    }

    static SortedSet<String> names(TensorStore store, Generations generations, StopFlags flags) {
        SortedSet<String> out = new TreeSet<>(flags.jobs());
        out.addAll(generations.jobs());
        out.addAll(generations.lost().jobs());
        StorePath root = StorePath.parse("/job");
        if (store.stat(root).map(e -> e.type() == EntryType.DIR).orElse(false)) {
            for (Entry e : store.list(root, false)) {
                out.add(e.name());
            }
        }
        return out;
    }

    /** @throws StoreException not found (404), naming the known jobs, when the daemon does not know {@code job} */
    static void require(TensorStore store, Generations generations, StopFlags flags, String job) {
        if (store.stat(JobNamespace.root(job)).isPresent() || flags.jobs().contains(job)
                || generations.jobs().contains(job) || generations.lost().jobs().contains(job)) {
            return;
        }
        SortedSet<String> known = names(store, generations, flags);
        String listed = known.isEmpty() ? "none" : String.join(", ", known.stream().limit(MAX_LISTED).toList())
                + (known.size() > MAX_LISTED ? " and " + (known.size() - MAX_LISTED) + " more" : "");
        throw StoreException.notFound("no job '" + job + "' on this daemon (known jobs: " + listed + "); check the "
                + "name; a job is created by its first save or by PUT /api/v1/dirs/job/" + job);
    }
}
