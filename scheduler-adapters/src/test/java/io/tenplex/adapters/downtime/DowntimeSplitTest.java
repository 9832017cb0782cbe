package io.tenplex.adapters.downtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The join of the ranks' marks into a split, and what a report may hold. */
class DowntimeSplitTest {
    private final ObjectMapper json = new ObjectMapper();

    private RankReport report(String body) throws Exception {
        return RankReport.parse(json.readTree(body));
    }

    private static void keep(ChangeReports r, RankReport report) {
        r.add(report, "r1");
    }

    private static double now() {
        return System.currentTimeMillis() / 1e3;
    }

    @Test
    void relaunch_phasesAreConsecutive_sumToTheDowntime_commitFromTheDaemon() throws Exception {
        ChangeTimes t = new ChangeTimes();
        double s = now() + 1;
        t.planned(10_000_000);
        t.committed(40, 5);
        double commit = t.committedAt();
        ChangeReports r = new ChangeReports();
        keep(r, report("{\"rank\": 0, \"step\": 7, \"marks\": [[\"stop\", " + (s - 3) + "], [\"save\", " + (s - 2.9)
                + "]]}"));
        keep(r, report("{\"rank\": 1, \"step\": 7, \"marks\": [[\"stop\", " + (s - 2.95) + "], [\"save\", "
                + (s - 2.8) + "]]}"));
        for (int rank = 0; rank < 2; rank++) {
            keep(r, report("{\"rank\": " + rank + ", \"step\": 7, \"spawn\": " + (commit + 0.1) + ", \"marks\": "
                    + "[[\"relaunch\", " + (commit + 1 + rank * 0.1) + "], [\"load\", " + (commit + 1.3) + "], "
                    + "[\"first_step\", " + (commit + 1.5 + rank * 0.05) + "]]}"));
        }
        DowntimeSplit d = DowntimeSplit.join(r.of(7), t, 2);
        assertTrue(d.complete());
        assertEquals(List.of("save", "commit", "relaunch", "load", "first_step"), List.copyOf(d.phases().keySet()));
        assertEquals(0.2, d.phases().get("save"), 1e-6, "from the first rank's stop to the last rank's save");
        assertEquals(commit - (s - 2.8), d.phases().get("commit"), 1e-6);
        assertEquals(1.1, d.phases().get("relaunch"), 1e-6);
        assertEquals(0.2, d.phases().get("load"), 1e-6);
        assertEquals(0.25, d.phases().get("first_step"), 1e-6);
        assertEquals(commit + 1.55 - (s - 3), d.seconds(), 1e-6);
        assertEquals(d.seconds(), d.phases().values().stream().mapToDouble(Double::doubleValue).sum(), 1e-9);
        assertEquals(0.01, d.daemon().get("plan"), 1e-9);
        assertEquals(0.04, d.daemon().get("move"), 1e-9);
        assertEquals(0.1, d.daemon().get("spawn"), 1e-3);
        assertEquals(2, d.ranksStopped());
    }

    @Test
    void incomplete_untilEveryNewRankReportsItsFirstStep_andNoPhaseIsNegative() throws Exception {
        ChangeTimes t = new ChangeTimes();
        double s = now();
        ChangeReports r = new ChangeReports();
        keep(r, report("{\"rank\": 0, \"step\": 3, \"marks\": [[\"stop\", " + s + "], [\"save\", " + (s + 1) + "]]}"));
        keep(r, report("{\"rank\": 0, \"step\": 3, \"marks\": [[\"commit\", " + (s + 0.5) + "], [\"regroup\", "
                + (s + 2) + "], [\"rebuild\", " + (s + 2.5) + "], [\"load\", " + (s + 3) + "], [\"first_step\", "
                + (s + 4) + "]]}"));
        DowntimeSplit d = DowntimeSplit.join(r.of(3), t, 2);
        assertFalse(d.complete(), "one of two new ranks reported");
        assertEquals(0.0, d.phases().get("commit"), "a commit seen before the save ended counts as no wait");
        assertEquals(List.of("save", "commit", "regroup", "rebuild", "load", "first_step"),
                List.copyOf(d.phases().keySet()));
        assertEquals(4.0, d.seconds(), 1e-6);
        assertEquals(4.0, d.phases().values().stream().mapToDouble(Double::doubleValue).sum(), 1e-6);
        assertNull(DowntimeSplit.join(r.of(4), t, 1).seconds(), "no marks of step 4");
    }

    @Test
    void reports_refuseWhatCannotBeKept_namingTheValue() {
        String[] bad = {"[]", "{\"rank\": 0, \"step\": 1}", "{\"rank\": -1, \"step\": 1, \"marks\": []}",
            "{\"rank\": 16384, \"step\": 1, \"marks\": []}", "{\"rank\": 0, \"step\": -2, \"marks\": []}",
            "{\"rank\": 0, \"step\": 1.5, \"marks\": []}", "{\"rank\": 0, \"step\": 1, \"marks\": [[\"warmup\", 5]]}",
            "{\"rank\": 0, \"step\": 1, \"marks\": [[\"stop\", 5], [\"stop\", 6]]}",
            "{\"rank\": 0, \"step\": 1, \"marks\": [[\"stop\", -5]]}", "{\"rank\": 0, \"step\": 1, \"marks\": [[\"stop\"]]}",
            "{\"rank\": 0, \"step\": 1, \"marks\": [[\"stop\", \"now\"]]}", "{\"rank\": 0, \"step\": 1, \"marks\": {}}",
            "{\"rank\": 0, \"step\": 1, \"marks\": [], \"spawn\": 1e300}", "{\"rank\": 0, \"step\": 1, \"marks\": [], \"x\": 1}"};
        for (String b : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> report(b), b);
            assertFalse(e.getMessage().isBlank());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> report("{\"rank\": 0, \"step\": 1, \"marks\": "
                + "[[\"warmup\", 5]]}")).getMessage().contains("warmup"));
    }
    /** A rank's slow load (as tenplex.downtime reports it) is listed with the split, once per (rank, phase). */
    @Test
    void slowPaths_reportedWithTheMarks_areListedWithTheSplit() throws Exception {
        ChangeTimes t = new ChangeTimes();
        double s = now();
        t.planned(1_000_000);
        t.committed(2, 1);
        ChangeReports r = new ChangeReports();
        keep(r, report("{\"rank\": 0, \"step\": 3, \"marks\": [[\"stop\", " + (s - 2) + "], [\"save\", " + (s - 1.9)
                + "]]}"));
        String slow = "\"slow\": [{\"phase\": \"load\", \"what\": \"1 of the loaded tensors over REST\", \"why\": "
                + "\"copying them into shared memory would leave less than 1/4 of the budget free\"}]";
        keep(r, report("{\"rank\": 1, \"step\": 3, \"marks\": [[\"load\", " + (s - 0.5) + "]], " + slow + "}"));
        keep(r, report("{\"rank\": 1, \"step\": 3, \"marks\": [[\"first_step\", " + (s - 0.4) + "]], "
                + slow.replace("1 of", "2 of") + "}")); // the first report of (rank, phase) is kept
        DowntimeSplit d = DowntimeSplit.join(r.of(3), t, 2);
        assertEquals(List.of(new SlowPath(1, "load", "1 of the loaded tensors over REST", "copying them into shared "
                + "memory would leave less than 1/4 of the budget free")), d.slowPaths());
        assertTrue(json.writeValueAsString(d).contains("\"slowPaths\":[{\"rank\":1,\"phase\":\"load\""),
                json.writeValueAsString(d));
        assertNull(DowntimeSplit.join(new ChangeReports().of(3), t, 2).slowPaths(), "none: left out");
        assertNull(d.slowMoves(), "no move note: left out");
        assertTrue(!json.writeValueAsString(d).contains("slowMoves"), json.writeValueAsString(d));
        t.slowMoves(java.util.Map.of(1, "2.0 MB into private memory, which a load copies again (x)", 0,
                "695.0 MB into 1 new shared-memory segment, touched for the first time (y)"));
        DowntimeSplit moved = DowntimeSplit.join(r.of(3), t, 2);
        assertEquals(List.of(0, 1), List.copyOf(moved.slowMoves().keySet()), "by worker, in order");
        assertTrue(json.writeValueAsString(moved).contains("\"slowMoves\":{\"0\":\"695.0 MB into 1 new shared-memory"),
                json.writeValueAsString(moved));
        String[] bad = {"\"slow\": {}", "\"slow\": [1]", "\"slow\": [{\"phase\": \"warmup\", \"what\": \"x\", "
                + "\"why\": \"y\"}]", "\"slow\": [{\"phase\": \"load\", \"what\": \"x\"}]", "\"slow\": [{\"phase\": "
                + "\"load\", \"what\": \"x\", \"why\": \"y\", \"z\": 1}]", "\"slow\": [{\"phase\": \"load\", \"what\": \"x\", "
                + "\"why\": \"" + "y".repeat(SlowPath.MAX_WHY + 1) + "\"}]", slow.replace("]", ", " + slow.substring(
                slow.indexOf('{'), slow.lastIndexOf(']')) + "]")};
        for (String b : bad) {
            String body = "{\"rank\": 0, \"step\": 1, \"marks\": [], " + b + "}";
            assertThrows(IllegalArgumentException.class, () -> report(body), body);
        }
    }
}
