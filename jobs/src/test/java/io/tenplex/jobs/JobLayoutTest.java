package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class JobLayoutTest {
    private final JobLayout l = new JobLayout("j");

    @Test
    void storePaths() {
        assertEquals("/job/j/save/3", l.savedRank(3).toString());
        assertEquals("/job/j/save/3/m/w", l.saved(3, "m/w").toString());
        assertEquals("/job/j/load", l.load().toString());
        assertEquals("/job/j/load/2", l.loadRank(2).toString());
        assertEquals("/job/j/load/2/m/w", l.loaded(2, "m/w").toString());
        assertEquals("/job/j/generations/100", l.generation(100).toString());
        assertEquals("/job/j/model.json", l.modelSpec().toString());
    }

    @Test
    void apiRoutes() {
        assertEquals("/api/v1/jobs/j/stop", l.apiStop());
        assertEquals("/api/v1/jobs/j/reconfigure", l.apiReconfigure(false));
        assertEquals("/api/v1/jobs/j/reconfigure?dryRun=true", l.apiReconfigure(true));
        assertEquals("/api/v1/jobs/j/resources", l.apiResources());
        assertEquals("/api/v1/jobs/j/resources/c1", l.apiResourceChange("c1"));
        assertEquals("/api/v1/jobs/j/saves/7/ranks/1", l.apiSaveRank(7, 1));
    }

    @Test
    void jobNameWithSlashIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new JobLayout("a/b"));
    }
}
