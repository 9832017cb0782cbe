package io.tenplex.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tenplex.jobs.common.JobLayout;
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
    void stepDirectoryNames_upToLongMaxValue_inCanonicalDecimalOnly() {
        assertEquals(java.util.OptionalLong.of(0), JobLayout.step("0"));
        assertEquals(java.util.OptionalLong.of(1_764_191_000_123_456_789L), JobLayout.step("1764191000123456789"));
        assertEquals(java.util.OptionalLong.of(Long.MAX_VALUE), JobLayout.step("9223372036854775807"));
        for (String bad : new String[] {"", "9223372036854775808", "99999999999999999999", "007", "-1", "+1", "1a",
                "manifests", "\u0661"}) {
            assertEquals(java.util.OptionalLong.empty(), JobLayout.step(bad), bad);
        }
    }

    @Test
    void daemonOwnedPaths_areTheGenerationsAndTheCurrentGenerationFile() {
        for (String p : new String[] {"/job/j/generation", "/job/j/generations", "/job/j/generations/5",
                "/job/j/generations/5/0/w", "/job/j/generations/5/manifests/0.json"}) {
            assertEquals(true, JobLayout.daemonOwned(io.tenplex.store.StorePath.parse(p)).isPresent(), p);
        }
        for (String p : new String[] {"/", "/job", "/job/j", "/job/j/save/0/w", "/job/j/generationsx",
                "/job/j/load/0/generations/1", "/other/j/generations/1", "/job/j/replicas/5/0/w"}) {
            assertEquals(false, JobLayout.daemonOwned(io.tenplex.store.StorePath.parse(p)).isPresent(), p);
        }
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
    void apiRoutes_encodeTheNameAsOneSegment() {
        assertEquals("/api/v1/jobs/p%20q%25%3F%23/stop", new JobLayout("p q%?#").apiStop());
        assertEquals("/api/v1/jobs/x%252F/saves/7/ranks/1", new JobLayout("x%2F").apiSaveRank(7, 1));
        assertEquals("/api/v1/jobs/.hidden/stop", new JobLayout(".hidden").apiStop());
    }

    @Test
    void jobNameThatIsNotOneDirectory_isRejected() {
        for (String bad : new String[] {"a/b", "", ".", "..", "a\0b", "x".repeat(256)}) {
            io.tenplex.store.StoreException e = assertThrows(io.tenplex.store.StoreException.class,
                    () -> new JobLayout(bad), bad);
            assertEquals(io.tenplex.store.StoreException.Kind.BAD_REQUEST, e.kind());
        }
    }
}
