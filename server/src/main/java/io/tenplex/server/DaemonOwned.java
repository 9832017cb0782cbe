package io.tenplex.server;

import io.tenplex.jobs.common.JobLayout;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;

/**
 * Refuses a client's write or delete of a path only the daemon writes (a job's sealed generations and
 * the file naming its current one, see {@link JobLayout#daemonOwned}) with 409 {@code conflict},
 * before anything is read or changed.
 */
final class DaemonOwned {
    private DaemonOwned() {
    }

    static void check(StorePath path) {
        JobLayout.daemonOwned(path).ifPresent(why -> {
            throw StoreException.conflict(why);
        });
    }
}
