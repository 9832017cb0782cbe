package io.tenplex.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.jobs.common.JobLayout;
import org.junit.jupiter.api.Test;

/** The client's own job routes (it depends on no tenplex module) agree with the daemon's JobLayout. */
class JobRoutesTest {
    @Test
    void routes_areTheDaemonsJobLayout() {
        for (String job : new String[] {"gpt", "job-1", "a.b_c", "p q", "x%2F", "r?s#t", "\u00e9", ".hidden"}) {
            JobRoutes r = new JobRoutes(job);
            JobLayout l = new JobLayout(job);
            assertEquals(l.savedRank(3).toString(), r.savedRank(3));
            assertEquals(l.apiSaveRank(20, 3), r.saveRank(20, 3));
            assertEquals(l.apiLoad(3), r.load(3));
            assertEquals(l.apiStop(), r.stop());
        }
    }

    @Test
    void aJobNameThatCannotBeAPath_isRefused() {
        for (String bad : new String[] {"", "a/b", "..", ".", "a\0b", "x".repeat(256)}) {
            assertThrows(IllegalArgumentException.class, () -> new JobRoutes(bad));
        }
    }
}
