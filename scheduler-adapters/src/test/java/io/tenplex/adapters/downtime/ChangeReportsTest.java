package io.tenplex.adapters.downtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.StoreException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What one resource change keeps of its ranks' reports: each (rank, phase) once, a few steps, bounded. */
class ChangeReportsTest {
    private final ObjectMapper json = new ObjectMapper();

    private RankReport report(int rank, long step, String marks) throws Exception {
        return RankReport.parse(json.readTree("{\"rank\": " + rank + ", \"step\": " + step + ", \"marks\": " + marks
                + "}"));
    }

    @Test
    void aPhaseReportedAgain_sameTimeChangesNothing_anotherTimeIs409_andTheFirstStays() throws Exception {
        ChangeReports r = new ChangeReports();
        r.add(report(0, 5, "[[\"stop\", 10], [\"save\", 11]]"), "r1");
        r.add(report(0, 5, "[[\"stop\", 10], [\"save\", 11]]"), "r1");
        assertEquals(2, r.of(5).count(), "a retry adds nothing");
        StoreException e = assertThrows(StoreException.class, () -> r.add(report(0, 5, "[[\"save\", 12], [\"load\", "
                + "13]]"), "r1"));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("rank 0 already reported save at 11.0 for step 5 of resource change r1"),
                e.getMessage());
        assertEquals(11.0, r.of(5).latest("save").getAsDouble());
        assertEquals(0, r.of(5).ranks("load"), "nothing of the refused report is kept");
        RankReport spawned = RankReport.parse(json.readTree("{\"rank\": 1, \"step\": 5, \"spawn\": 20, \"marks\": []}"));
        r.add(spawned, "r1");
        RankReport again = RankReport.parse(json.readTree("{\"rank\": 1, \"step\": 5, \"spawn\": 21, \"marks\": []}"));
        assertTrue(assertThrows(StoreException.class, () -> r.add(again, "r1")).getMessage().contains("spawn"));
        assertEquals(20.0, r.of(5).latestSpawn().getAsDouble());
    }

    @Test
    void aChangeHoldsAFewSteps_anotherIs409_andNoStepIsEvicted() throws Exception {
        ChangeReports r = new ChangeReports();
        for (int step = 1; step <= ChangeReports.MAX_STEPS; step++) {
            r.add(report(0, step, "[[\"stop\", 5]]"), "r1");
        }
        StoreException e = assertThrows(StoreException.class, () -> r.add(report(0, 1_000_000_000_000L,
                "[[\"stop\", 5]]"), "r1"));
        assertEquals(StoreException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("step 1000000000000 is not kept"), e.getMessage());
        assertEquals(Map.of(1L, 1, 2L, 1, 3L, 1, 4L, 1), r.held(), "every step kept stays");
        r.add(report(1, 1, "[[\"stop\", 6]]"), "r1");
        assertEquals(2, r.of(1).ranks("stop"), "a step held takes more ranks");
    }

    @Test
    void aStepHoldsAtMostTheLimit_theReportOverItIsRefusedWhole() throws Exception {
        ChangeReports r = new ChangeReports();
        String four = "[[\"stop\", 5], [\"save\", 6], [\"relaunch\", 7], [\"load\", 8]]";
        for (int rank = 0; rank < ChangeReports.MAX_MARKS_PER_STEP / 4; rank++) {
            r.add(report(rank, 1, four), "r1");
        }
        StoreException e = assertThrows(StoreException.class, () -> r.add(report(0, 1, "[[\"first_step\", 9]]"), "r1"));
        assertEquals(StoreException.Kind.TOO_LARGE, e.kind());
        assertEquals(ChangeReports.MAX_MARKS_PER_STEP, r.of(1).count(), "nothing of the refused report kept");
        assertEquals(0, r.of(2).count());
    }
}
