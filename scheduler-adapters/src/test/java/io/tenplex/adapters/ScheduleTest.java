package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tenplex.ptc.ParallelConfig;
import org.junit.jupiter.api.Test;

class ScheduleTest {
    @Test
    void readsThePrototypesSchedule_andTheConfigExtension() {
        Schedule s = Schedule.parse("[{\"step\": 0, \"size\": 4}, {\"step\": 100, \"size\": 8, \"tp\": 2, \"pp\": 2, "
                + "\"dp\": 2}, {\"step\": 200, \"size\": 0}]");
        assertEquals(3, s.entries().size());
        assertNull(s.entries().get(0).config());
        assertEquals(ParallelConfig.of(2, 2, 2), s.entries().get(1).config());
        assertTrue(s.entries().get(2).stops());
        Schedule t = Schedule.parse("[{\"time\": 0, \"size\": 2}, {\"time\": 1.5, \"size\": 4}]");
        assertEquals(1.5, t.entries().get(1).minutes());
        assertEquals("1.5 min", t.entries().get(1).when());
    }

    @Test
    void everyValidSchedule_stillParses_withOnlyKnownKeys() {
        String[] good = {
            "[{\"step\": 0, \"size\": 1}]",
            "[{\"time\": 0, \"size\": 2}, {\"time\": 1.5, \"size\": 4}, {\"time\": 3, \"size\": 0}]",
            "[{\"step\": 0, \"size\": 4, \"tp\": 2, \"pp\": 2, \"dp\": 1}, {\"step\": 15, \"size\": 4, \"tp\": 1, "
                + "\"pp\": 1, \"dp\": 4}, {\"step\": 30, \"size\": 4, \"tp\": 4, \"pp\": 1, \"dp\": 1}, "
                + "{\"step\": 45, \"size\": 4, \"tp\": 1, \"pp\": 2, \"dp\": 2}]",
            "[{\"step\": 0, \"size\": 2, \"dp\": 2}, {\"step\": 8, \"size\": 2, \"tp\": 2}]",
        };
        for (String g : good) {
            assertTrue(Schedule.parse(g).entries().size() >= 1, g);
        }
        assertEquals(ParallelConfig.of(1, 1, 2), Schedule.parse(good[3]).entries().get(0).config());
    }

    @Test
    void editDistance_countsInsertionsDeletionsAndSubstitutions() {
        assertEquals(0, Schedule.distance("size", "size"));
        assertEquals(1, Schedule.distance("db", "dp"));
        assertEquals(1, Schedule.distance("sizes", "size"));
        assertEquals(2, Schedule.distance("szie", "size"));
        assertEquals(4, Schedule.distance("", "step"));
        assertTrue(Schedule.distance("learning_rate", "time") > 2);
    }

    @Test
    void refusesSchedulesItCannotFollow() {
        String[][] bad = {
            {"{}", "non-empty JSON list"},
            {"[{\"step\": 5, \"size\": 4}]", "must be at step 0"},
            {"[{\"step\": 0, \"size\": 4}, {\"step\": 0, \"size\": 2}]", "step 0 is not after step 0"},
            {"[{\"step\": 0, \"size\": 4}, {\"time\": 3, \"size\": 2}]", "either steps or times"},
            {"[{\"step\": 0, \"size\": 4, \"tp\": 3}]", "tp*pp*dp = 3 but size is 4"},
            {"[{\"step\": 0, \"size\": -1}]", "\"size\" must be an integer >= 0"},
            {"[{\"step\": 0, \"size\": 0}]", "must start the job"},
            {"[{\"step\": 0, \"size\": 2}, {\"step\": 5, \"size\": 0}, {\"step\": 9, \"size\": 2}]", "after the job was stopped"},
            {"[{\"step\": 0, \"time\": 0, \"size\": 1}]", "exactly one of"},
            {"[{\"step\": 0, \"size\": 1}", "not valid JSON"},
            {"[{\"step\": 0}]", "schedule entry 0: \"size\" is missing"},
            {"[{\"time\": 0}]", "schedule entry 0: \"size\" is missing"},
            {"[{\"step\": 0, \"size\": \"2\"}]", "\"size\" must be an integer >= 0"},
            {"[3]", "schedule entry 0: an entry is a JSON object"},
            {"[{\"step\": 0, \"size\": 2, \"db\": 2}]", "schedule entry 0: unknown key \"db\" (did you mean \"dp\"?); "
                + "known keys: step, time, size, tp, pp, dp"},
            {"[{\"step\": 0, \"szie\": 2}]", "schedule entry 0: unknown key \"szie\" (did you mean \"size\"?)"},
            {"[{\"step\": 0, \"sizes\": 2}]", "schedule entry 0: unknown key \"sizes\" (did you mean \"size\"?)"},
            {"[{\"step\": 0, \"size\": 1}, {\"stpe\": 5, \"size\": 2}]",
                "schedule entry 1: unknown key \"stpe\" (did you mean \"step\"?)"},
            {"[{\"step\": 0, \"size\": 1, \"learning_rate\": 0.1}]",
                "schedule entry 0: unknown key \"learning_rate\"; known keys: step, time, size, tp, pp, dp"},
            // The key check comes first: the typo is reported, not the bad step or the size it hides.
            {"[{\"step\": -1, \"time\": 0, \"szie\": 2}]", "unknown key \"szie\" (did you mean \"size\"?)"},
        };
        for (String[] b : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Schedule.parse(b[0]), b[0]);
            assertTrue(e.getMessage().contains(b[1]), b[0] + " -> " + e.getMessage());
        }
    }
}
