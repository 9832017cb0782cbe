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
        };
        for (String[] b : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Schedule.parse(b[0]), b[0]);
            assertTrue(e.getMessage().contains(b[1]), b[0] + " -> " + e.getMessage());
        }
    }
}
