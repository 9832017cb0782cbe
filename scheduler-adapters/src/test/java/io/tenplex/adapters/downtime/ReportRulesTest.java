package io.tenplex.adapters.downtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.store.StoreException;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** The checks of a report against its change: each rank in its world, each time in the change's window. */
class ReportRulesTest {
    private final ObjectMapper json = new ObjectMapper();
    private final ChangeTimes t = new ChangeTimes();
    private final double posted = t.postedAt();

    private RankReport report(int rank, String spawn, String... phaseAndTime) throws Exception {
        StringBuilder b = new StringBuilder("{\"rank\": " + rank + ", \"step\": 5, " + (spawn == null ? ""
                : "\"spawn\": " + spawn + ", ") + "\"marks\": [");
        for (int i = 0; i < phaseAndTime.length; i += 2) {
            b.append(i == 0 ? "" : ", ").append("[\"").append(phaseAndTime[i]).append("\", ").append(phaseAndTime[i + 1])
                    .append(']');
        }
        return RankReport.parse(json.readTree(b.append("]}").toString()));
    }

    private String at(double offset) {
        return String.format(Locale.ROOT, "%.6f", posted + offset);
    }

    private String refused(RankReport r, double now, int oldWorld, int newWorld) {
        return assertThrows(IllegalArgumentException.class, () -> ReportRules.check(r, "r1", t, now, oldWorld,
                newWorld)).getMessage();
    }

    @Test
    void stopAndSave_fromTheOldWorld_theRest_fromTheNewWorld() throws Exception {
        double now = posted + 10;
        ReportRules.check(report(3, null, "stop", at(1), "save", at(2)), "r1", t, now, 4, 1);
        ReportRules.check(report(0, at(3), "relaunch", at(4), "first_step", at(5)), "r1", t, now, 4, 1);
        assertTrue(refused(report(4, null, "stop", at(1)), now, 4, 8).contains("rank 4 is outside the old world of 4 "
                + "ranks of resource change r1"));
        assertTrue(refused(report(1, null, "first_step", at(1)), now, 4, 1).contains("rank 1 is outside the new world "
                + "of 1 rank"));
        assertTrue(refused(report(2, at(1), "stop", at(1)), now, 4, 2).contains("new world"), "spawn: a new rank");
        StoreException early = assertThrows(StoreException.class, () -> ReportRules.check(report(0, null, "load",
                at(1)), "r1", t, now, 4, 0));
        assertEquals(StoreException.Kind.CONFLICT, early.kind());
        assertTrue(early.getMessage().contains("has not chosen its new configuration"), early.getMessage());
    }

    @Test
    void everyTime_liesFromThePostingToNow_withTheSlack() throws Exception {
        double now = posted + 10;
        double slack = ReportRules.SKEW_SECONDS;
        ReportRules.check(report(0, null, "stop", at(-slack + 0.01), "save", at(10 + slack - 0.01)), "r1", t, now, 1, 1);
        assertTrue(refused(report(0, null, "stop", "1.0"), now, 1, 1).startsWith("mark stop at 1.000000 is outside "
                + "the window of resource change r1"));
        assertTrue(refused(report(0, null, "stop", at(-slack - 0.01)), now, 1, 1).contains("mark stop"));
        assertTrue(refused(report(0, null, "stop", at(1), "save", at(10 + slack + 0.01)), now, 1, 1)
                .contains("mark save"));
        assertTrue(refused(report(0, "1.0", "load", at(1)), now, 1, 1).startsWith("\"spawn\" at 1.000000"));
    }
}
