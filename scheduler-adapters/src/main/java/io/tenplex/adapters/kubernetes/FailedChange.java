package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A change that failed after the ranks saved for it: the daemon keeps that save as the job's newest
 * complete generation and clears the stop flag, and the ranks wait for an assignment of that
 * generation (a live rank in the rendezvous store, a relaunched one at its start). The assignment
 * they get is the last one again, under the same configuration and pods, for the generation they
 * saved: they continue where they stopped (live ranks in place) instead of waiting until their
 * timeout.
 */
final class FailedChange {
    private FailedChange() {
    }

    /**
     * The last assignment {@code last} again for the generation change {@code id} ended with
     * ({@code failed}, the daemon's final status), or null when the ranks did not save for it (no
     * generation, or the one {@code last} already names).
     */
    static ObjectNode again(JsonNode last, String id, JsonNode failed) {
        JsonNode generation = failed.path("generation");
        if (last == null || !generation.isIntegralNumber() || generation.equals(last.path("generation"))) {
            return null;
        }
        ObjectNode a = last.deepCopy();
        a.set("generation", generation);
        a.put("change", id);
        return a;
    }
}
