package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tenplex.jobs.reconfigure.InDoubt.Decision;
import io.tenplex.jobs.reconfigure.InDoubt;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The in-doubt rules as a table: what each participant decides from what it can learn. */
class InDoubtTest {
    /** Parts by worker and the coordinator's state; aborting a prepared part aborts it. */
    private static final class Cluster implements InDoubt.Ask {
        final Map<Integer, String> parts = new HashMap<>();
        String coordinator = InDoubt.UNREACHABLE;
        final List<Integer> aborted = new ArrayList<>();

        @Override
        public String part(int worker) {
            return parts.getOrDefault(worker, InDoubt.UNREACHABLE);
        }

        @Override
        public String coordinator() {
            return coordinator;
        }

        @Override
        public String abort(int worker) {
            String s = part(worker);
            if (s.equals("prepared") || s.equals("executing")) {
                parts.put(worker, "aborted");
                aborted.add(worker);
                return "aborted";
            }
            return s;
        }
    }

    private static final List<Integer> WORKERS = List.of(0, 1, 2);

    @Test
    void commitPointCommitted_everyoneCommits_whateverTheCoordinator() {
        Cluster c = new Cluster();
        c.parts.putAll(Map.of(0, "committed", 1, "prepared", 2, "prepared"));
        assertEquals(Decision.COMMIT, InDoubt.decide(1, WORKERS, c));
        c.coordinator = "aborted";
        assertEquals(Decision.COMMIT, InDoubt.decide(2, WORKERS, c));
    }

    @Test
    void coordinatorStillWorking_waits() {
        Cluster c = new Cluster();
        c.parts.putAll(Map.of(0, "prepared", 1, "prepared", 2, "executing"));
        for (String s : List.of("planned", "executing", "committing")) {
            c.coordinator = s;
            assertEquals(Decision.WAIT, InDoubt.decide(0, WORKERS, c), s);
            assertEquals(Decision.WAIT, InDoubt.decide(1, WORKERS, c), s);
        }
    }

    @Test
    void coordinatorGone_nobodyCommitted_theCommitPointIsAborted_andEveryoneAborts() {
        Cluster c = new Cluster();
        c.parts.putAll(Map.of(0, "prepared", 1, "prepared", 2, "prepared"));
        assertEquals(Decision.ABORT, InDoubt.decide(1, WORKERS, c));
        assertEquals(List.of(0), c.aborted); // so a late commit from the coordinator is refused
        assertEquals(Decision.ABORT, InDoubt.decide(2, WORKERS, c));
        c.coordinator = InDoubt.ABSENT; // restarted
        assertEquals(Decision.ABORT, InDoubt.decide(0, WORKERS, c));
    }

    @Test
    void commitPointUnreachable_commitsOnlyIfAnotherParticipantCommitted() {
        Cluster c = new Cluster();
        c.parts.putAll(Map.of(1, "committed", 2, "prepared"));
        assertEquals(Decision.COMMIT, InDoubt.decide(2, WORKERS, c));
        c.parts.put(1, "prepared");
        assertEquals(Decision.ABORT, InDoubt.decide(2, WORKERS, c));
    }

    @Test
    void commitPointAbortedOrForgotten_aborts() {
        Cluster c = new Cluster();
        c.coordinator = "committing";
        c.parts.put(0, "aborted");
        assertEquals(Decision.ABORT, InDoubt.decide(1, WORKERS, c));
        c.parts.put(0, InDoubt.ABSENT);
        assertEquals(Decision.ABORT, InDoubt.decide(1, WORKERS, c));
    }
}
