package io.tenplex.server.streams;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The relayed reads waiting at the daemon that holds their rank, by the id their relaying daemon
 * chose, so that the relaying daemon can withdraw one whose reader went away while keeping open the
 * connection that the read's batch (if one was already taken) comes back on. A withdrawal that comes
 * before its read is remembered (the last {@link #EARLY} of them): that read then takes nothing.
 */
final class RelayedReads {
    /** How many withdrawals of reads not seen (yet) are remembered. */
    static final int EARLY = 4096;
    /** The longest read id a relaying daemon may choose. */
    static final int MAX_ID_CHARS = 128;

    private final Map<String, CompletableFuture<Void>> waiting = new HashMap<>();
    private final LinkedHashSet<String> early = new LinkedHashSet<>();

    static String check(String id) {
        if (id.isEmpty() || id.length() > MAX_ID_CHARS) {
            throw new IllegalArgumentException("read id of " + id.length() + " characters (expected: 1 to "
                    + MAX_ID_CHARS + ")");
        }
        return id;
    }

    /** A read that comes: its future completes when it is withdrawn (at once if it already was). */
    synchronized CompletableFuture<Void> arrive(String id) {
        if (early.remove(check(id))) {
            return CompletableFuture.completedFuture(null);
        }
        return waiting.computeIfAbsent(id, k -> new CompletableFuture<>());
    }

    /** The read was answered: a later withdrawal finds nothing to withdraw. */
    synchronized void answered(String id) {
        waiting.remove(id);
    }

    /** Withdraws the read (its batch, if it took one, is on its way back to the relaying daemon). */
    void withdraw(String id) {
        CompletableFuture<Void> read;
        synchronized (this) {
            read = waiting.remove(check(id));
            if (read == null && early.add(id) && early.size() > EARLY) {
                Iterator<String> oldest = early.iterator();
                oldest.next();
                oldest.remove();
            }
        }
        if (read != null) {
            read.complete(null);
        }
    }

    /** How many relayed reads wait here (for tests). */
    synchronized int waiting() {
        return waiting.size();
    }
}
