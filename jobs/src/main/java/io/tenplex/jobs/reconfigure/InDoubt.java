package io.tenplex.jobs.reconfigure;

import java.util.List;
import java.util.Set;

/**
 * How a prepared part whose commit or abort has not come in time learns the outcome. The
 * coordinator commits the first participant (the commit point) before any other, so:
 * <ul>
 *   <li>the commit point committed: commit; it aborted, failed or has no such part: abort;</li>
 *   <li>the coordinator still works on the reconfiguration: wait (ask again later);</li>
 *   <li>the coordinator is gone or finished without the commit point committing: the commit point
 *       aborts itself; any other part aborts the commit point (which answers "already committed"
 *       when it did commit: then commit) and aborts; when the commit point cannot be reached, commit
 *       if any other participant committed, else abort.</li>
 * </ul>
 * Because a commit point that was aborted refuses the coordinator's commit, the coordinator can
 * never commit anyone after a part has decided to abort: no cluster serves two generations.
 */
public final class InDoubt {
    public enum Decision { COMMIT, ABORT, WAIT }

    /** A part's or the coordinator's answer; {@link #UNREACHABLE} and {@link #ABSENT} stand for no answer. */
    public static final String UNREACHABLE = "unreachable";
    public static final String ABSENT = "absent";

    private static final Set<String> WORKING = Set.of("planned", "executing", "committing");

    /** The questions a part in doubt asks; each answers a state name, {@link #UNREACHABLE} or {@link #ABSENT}. */
    public interface Ask {
        String part(int worker);

        String coordinator();

        /** Asks {@code worker}'s part to abort: its state afterwards ("committed" when it had already). */
        String abort(int worker);
    }

    private InDoubt() {
    }

    public static Decision decide(int me, List<Integer> participants, Ask ask) {
        if (participants.isEmpty()) {
            return WORKING.contains(ask.coordinator()) ? Decision.WAIT : Decision.ABORT;
        }
        int point = participants.get(0);
        String pointState = point == me ? "prepared" : ask.part(point);
        if (pointState.equals("committed")) {
            return Decision.COMMIT;
        }
        if (Set.of("aborted", "failed", ABSENT).contains(pointState)) {
            return Decision.ABORT;
        }
        if (WORKING.contains(ask.coordinator())) {
            return Decision.WAIT;
        }
        if (point == me) {
            return Decision.ABORT; // nobody commits before the commit point
        }
        if (!pointState.equals(UNREACHABLE)) {
            String after = ask.abort(point);
            if (after.equals("committed")) {
                return Decision.COMMIT;
            }
            if (!after.equals(UNREACHABLE)) {
                return Decision.ABORT;
            }
        }
        for (int w : participants) {
            if (w != me && w != point && ask.part(w).equals("committed")) {
                return Decision.COMMIT;
            }
        }
        return Decision.ABORT;
    }
}
