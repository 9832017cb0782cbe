package io.tenplex.datasets;

import io.tenplex.store.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The mounts of this daemon by job: the current one, and the previous one while the current one
 * still loads from it (it keeps serving its samples to this daemon's loader and to peers until
 * then). A job has at most these two; unmounting removes both. Thread-safe.
 */
final class Mounts {
    private final Map<String, DatasetMount> current = new ConcurrentHashMap<>();
    private final Map<String, DatasetMount> previous = new ConcurrentHashMap<>();

    /** The job's current mount, or null. */
    DatasetMount get(String job) {
        return current.get(job);
    }

    /** The job's previous mount while it is still kept, or null. */
    DatasetMount previous(String job) {
        return previous.get(job);
    }

    /** The job's current mount; a {@code NOT_FOUND} error if it has none. */
    DatasetMount require(String job) {
        DatasetMount m = current.get(job);
        if (m == null) {
            throw StoreException.notFound("no dataset mounted for job " + job);
        }
        return m;
    }

    List<String> jobs() {
        return new ArrayList<>(current.keySet());
    }

    /** True while {@code m} is the job's mount or the previous one (still worth loading). */
    boolean isLive(DatasetMount m) {
        return current.get(m.job) == m || previous.get(m.job) == m;
    }

    boolean isCurrent(DatasetMount m) {
        return current.get(m.job) == m;
    }

    /**
     * Makes {@code m} the job's mount; the one it replaces becomes the previous one (returned, or
     * null), and an older previous one is closed.
     */
    synchronized DatasetMount install(DatasetMount m) {
        DatasetMount old = current.put(m.job, m);
        DatasetMount older = old == null ? null : previous.put(m.job, old);
        if (older != null) {
            older.close();
        }
        return old;
    }

    /** The loader is done with {@code old}: free it unless a newer remount already did. */
    void retire(DatasetMount old) {
        if (old != null && previous.remove(old.job, old)) {
            old.close();
        }
    }

    /** Removes and closes a job's mounts; readers waiting on them get an error. */
    synchronized void unmount(String job) {
        DatasetMount m = current.remove(job);
        if (m == null) {
            throw StoreException.notFound("no dataset mounted for job " + job);
        }
        m.close();
        DatasetMount p = previous.remove(job);
        if (p != null) {
            p.close();
        }
    }
}
