package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.kubernetes.KubernetesAdapter;
import io.tenplex.jobs.FakeCluster;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Pins the JSON text of a resource change's status (field order, absent and null fields), serialised
 * by a plain {@link ObjectMapper}: the wire must not change silently. Timings are masked.
 */
class AnswersJsonTest {
    private final ObjectMapper json = new ObjectMapper();
    private final FakeCluster cluster = new FakeCluster(2);

    @AfterEach
    void close() {
        cluster.close();
    }

    /** The text with every elapsed time (phase milliseconds, event seconds) replaced by {@code T}. */
    private String masked(Object o) throws Exception {
        return json.writeValueAsString(o).replaceAll("\"(stop|total|reconfigure)\":\\d+", "\"$1\":T")
                .replaceAll("\"\\d+\\.\\d{3}s ", "\"Ts ");
    }

    @Test
    void failedChange_hasItsError_nullSteps_andNoConfigOrReconfiguration() throws Exception {
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange c = changes.start("j", json.readTree("{\"size\": 2, \"devicesPerWorker\": 2, "
                + "\"saveTimeoutSeconds\": 0}"));
        c.finished().get(30, TimeUnit.SECONDS);
        assertEquals("{\"id\":\"" + c.id() + "\",\"job\":\"j\",\"state\":\"failed\",\"error\":\"the ranks of job j did "
                + "not all save within 0 s after the stop flag (is the job running and calling tenplex.should_stop?)\","
                + "\"devices\":[[0,0],[0,1]],\"atStep\":null,\"generation\":null,\"from\":null,"
                + "\"phaseMillis\":{\"total\":T},\"events\":[\"Ts no model spec or partition rules stored with job j: a change of its size alone is a data-parallel change, to (T,P,D)=(1,1,2)\",\"Ts stop flag raised; waiting for every rank to save "
                + "(generation after none)\",\"Ts not planned ahead: job j has no complete generation to take the "
                + "configuration of the save from, and the change gave none (\\\"from\\\"); planning after the save\",\"Ts failed: the ranks of job j did not all "
                + "save within 0 s after the stop "
                + "flag (is the job running and calling tenplex.should_stop?)\",\"Ts stop flag cleared\"]}", masked(c.describe()));
    }

    @Test
    void cancelledChange_answersItsFinalStatus_withTheStepAskedFor() throws Exception {
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange c = changes.start("j", json.readTree("{\"devices\": [[1, 0]], \"atStep\": 40}"));
        var cancelled = changes.cancel("j", c.id()).get(30, TimeUnit.SECONDS);
        assertEquals("{\"id\":\"" + c.id() + "\",\"job\":\"j\",\"state\":\"cancelled\",\"error\":\"cancelled before every "
                + "rank had saved\",\"devices\":[[1,0]],\"atStep\":40,\"generation\":null,\"from\":null,"
                + "\"phaseMillis\":{\"total\":T},\"events\":[\"Ts no model spec or partition rules stored with job j: a change of its size alone is a data-parallel change, to (T,P,D)=(1,1,1)\",\"Ts stop flag raised for step 40; waiting for every rank "
                + "to save (generation after none)\",\"Ts not planned ahead: job j has no complete generation to take the "
                + "configuration of the save from, and the change gave none (\\\"from\\\"); planning after the save\",\"Ts cancelled before every rank had "
                + "saved\","
                + "\"Ts stop flag cleared\"]}", masked(cancelled));
    }

    @Test
    void doneChange_hasTheChosenConfig_andTheReconfiguration_butNoError() throws Exception {
        var reconfiguration = new io.tenplex.jobs.reconfigure.ReconfigurationStatus("j", "p1", "(2,1,2)", "(4,1,1)", "committed",
                "local", "/job/j/generations/10", null, null, new java.util.LinkedHashMap<>(), Map.of(), null, null);
        var status = new ResourceChangeStatus("r1-ab", "j", "done", null, List.of(List.of(0, 0), List.of(0, 1)), 20L,
                10L, json.readTree("{\"tp\":2}"), json.readTree("{\"tp\":2,\"pp\":1,\"dp\":1}"),
                new java.util.LinkedHashMap<>(Map.of("stop", 3L)), List.of("e"), reconfiguration, null);
        assertEquals("{\"id\":\"r1-ab\",\"job\":\"j\",\"state\":\"done\",\"devices\":[[0,0],[0,1]],\"atStep\":20,"
                + "\"generation\":10,\"from\":{\"tp\":2},\"config\":{\"tp\":2,\"pp\":1,\"dp\":1},"
                + "\"phaseMillis\":{\"stop\":3},\"events\":[\"e\"],\"reconfiguration\":{\"job\":\"j\",\"plan\":\"p1\","
                + "\"from\":\"(2,1,2)\",\"to\":\"(4,1,1)\",\"state\":\"committed\",\"mode\":\"local\","
                + "\"source\":\"/job/j/generations/10\",\"phaseMillis\":{},\"workers\":{}}}", json.writeValueAsString(status));
    }

    @Test
    void kubernetesChange_refusedHasNoId_doneHasNoError() throws Exception {
        assertEquals("{\"devices\":{\"node-a\":2},\"state\":\"refused\",\"error\":\"no\"}",
                json.writeValueAsString(new KubernetesAdapter.Change(null, Map.of("node-a", 2), "refused", "no", null)));
        assertEquals("{\"id\":\"r2\",\"devices\":{\"node-a\":2},\"state\":\"done\",\"config\":{\"tp\":1}}",
                json.writeValueAsString(new KubernetesAdapter.Change("r2", Map.of("node-a", 2), "done", null,
                        json.readTree("{\"tp\":1}"))));
    }
}
