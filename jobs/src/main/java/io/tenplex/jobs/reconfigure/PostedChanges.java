package io.tenplex.jobs.reconfigure;

import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.store.StoreException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The changes whose definitions a daemon was posted and planned its part of, by job and change id:
 * the definition's digest and the plan digest the part answered. A change posted again with the same
 * definition (a coordinator's retry) is answered as before without planning again; the same id with
 * another definition is a conflict. The most recent {@link #KEPT} are remembered.
 */
public final class PostedChanges {
    static final int KEPT = 1024;

    /** What a change's part answered when it was planned. */
    public record Known(String definition, String planDigest) {}

    private final Map<String, Known> byChange = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Known> eldest) {
            return size() > KEPT;
        }
    };

    /** The digest of a definition as posted to {@code worker}. */
    static String definition(ChangeSpec spec, int worker) {
        return Descriptions.digest((worker + " " + spec).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The change as planned before, or null when it was not.
     *
     * @throws StoreException conflict when the change was posted before with another definition
     */
    synchronized Known known(ChangeSpec spec, String definition) {
        Known k = byChange.get(spec.job() + "\0" + spec.changeId());
        if (k != null && !k.definition().equals(definition)) {
            throw StoreException.conflict("change " + spec.changeId() + " of job " + spec.job() + " was posted here before "
                    + "with another definition; a change's id names one definition");
        }
        return k;
    }

    synchronized void planned(ChangeSpec spec, Known k) {
        byChange.put(spec.job() + "\0" + spec.changeId(), k);
    }
}
