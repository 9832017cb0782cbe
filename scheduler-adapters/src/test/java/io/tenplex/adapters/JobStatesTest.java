package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.RankActivity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The state a job's gauges show, decided from plain values: the fixed set, the order of the rules, the 60 s window. */
class JobStatesTest {
    private static final long NOW = TimeUnit.HOURS.toNanos(5);
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    private static JobStates.LastChange change(ResourceChange.State s, long ended) {
        return new JobStates.LastChange(s, ended);
    }

    @Test
    void names_areTheChangeStatesButDone_thenRunningAndIdle() {
        List<String> want = new ArrayList<>();
        for (ResourceChange.State s : ResourceChange.State.values()) {
            if (s != ResourceChange.State.DONE) {
                want.add(s.name().toLowerCase(java.util.Locale.ROOT));
            }
        }
        want.add("running");
        want.add("idle");
        assertEquals(want, JobStates.NAMES);
        assertTrue(JobStates.NAMES.containsAll(List.of("stopping", "reconfiguring", "failed", "running", "idle")));
    }

    @Test
    void of_nothingHeard_isIdle_andARecentReadOrSave_isRunning_for60s() {
        assertEquals("idle", JobStates.of(null, false, false, null, NOW));
        RankActivity.Seen read = new RankActivity.Seen(7, NOW - 60 * SECOND, 0);
        assertEquals("running", JobStates.of(null, false, false, read, NOW));
        assertEquals("idle", JobStates.of(null, false, false, read, NOW + 1));
        RankActivity.Seen saved = new RankActivity.Seen(7, 0, NOW - SECOND);
        assertEquals("running", JobStates.of(null, false, false, saved, NOW));
        assertEquals("idle", JobStates.of(null, false, false, new RankActivity.Seen(-1, 0, 0), NOW));
    }

    @Test
    void of_reconfiguringBeatsStopping_andStoppingBeatsAnEndedChange() {
        RankActivity.Seen seen = new RankActivity.Seen(7, NOW, NOW);
        assertEquals("reconfiguring", JobStates.of(change(ResourceChange.State.RECONFIGURING, 0), true, false, seen, NOW));
        assertEquals("reconfiguring", JobStates.of(null, true, true, seen, NOW), "a reconfiguration runs here");
        assertEquals("stopping", JobStates.of(change(ResourceChange.State.STOPPING, 0), false, false, seen, NOW));
        assertEquals("stopping", JobStates.of(null, true, false, seen, NOW), "a flag raised by another daemon");
        assertEquals("stopping", JobStates.of(change(ResourceChange.State.FAILED, NOW - SECOND), true, false, seen, NOW));
        assertTrue(JobStates.pending("stopping") && JobStates.pending("reconfiguring"));
        assertFalse(JobStates.pending("failed") || JobStates.pending("running") || JobStates.pending("idle"));
    }

    @Test
    void of_anEndedChange_holdsUntilARankSaves() {
        long ended = NOW - 10 * SECOND;
        RankActivity.Seen before = new RankActivity.Seen(7, NOW, ended - SECOND); // reads go on: not a save
        assertEquals("failed", JobStates.of(change(ResourceChange.State.FAILED, ended), false, false, before, NOW));
        assertEquals("failed", JobStates.of(change(ResourceChange.State.FAILED, ended), false, false, null, NOW));
        assertEquals("failed", JobStates.of(change(ResourceChange.State.FAILED, 0), false, false, before, NOW),
                "a change that has its final state but has not ended yet");
        RankActivity.Seen after = new RankActivity.Seen(8, NOW, ended + SECOND);
        assertEquals("running", JobStates.of(change(ResourceChange.State.FAILED, ended), false, false, after, NOW));
        assertEquals("running", JobStates.of(change(ResourceChange.State.DONE, ended), false, false, before, NOW));
        assertEquals("idle", JobStates.of(change(ResourceChange.State.DONE, ended), false, false, null, NOW));
    }

    @Test
    void dims_ofAConfiguration_andNoneForAMissingOrBadOne() throws Exception {
        ObjectMapper json = new ObjectMapper();
        assertEquals(Map.of("tp", 2, "pp", 1, "dp", 4), JobGauges.dims(json.readTree(
                "{\"tp\": 2, \"pp\": 1, \"dp\": 4, \"devicesPerWorker\": 4}")));
        assertEquals(Map.of(), JobGauges.dims(null));
        assertEquals(Map.of(), JobGauges.dims(json.readTree("{\"tp\": 2, \"pp\": 1}")));
        assertEquals(Map.of(), JobGauges.dims(json.readTree("{\"tp\": 2, \"pp\": 0, \"dp\": 1}")));
        assertEquals(Map.of(), JobGauges.dims(json.readTree("{\"tp\": \"2\", \"pp\": 1, \"dp\": 1}")));
        assertEquals(Map.of(), JobGauges.dims(json.readTree("[2, 1, 1]")));
    }
}
