package io.tenplex.adapters;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.FakeCluster;
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
                + "\"phaseMillis\":{\"total\":T},\"events\":[\"Ts stop flag raised; waiting for every rank to save "
                + "(generation after none)\",\"Ts failed: the ranks of job j did not all save within 0 s after the stop "
                + "flag (is the job running and calling tenplex.should_stop?)\",\"Ts stop flag cleared\"]}", masked(c.describe()));
    }

    @Test
    void cancelledChange_answersItsFinalStatus_withTheStepAskedFor() throws Exception {
        ResourceChanges changes = new ResourceChanges(cluster.jobs(0));
        ResourceChange c = changes.start("j", json.readTree("{\"devices\": [[1, 0]], \"atStep\": 40}"));
        var cancelled = changes.cancel("j", c.id()).get(30, TimeUnit.SECONDS);
        assertEquals("{\"id\":\"" + c.id() + "\",\"job\":\"j\",\"state\":\"failed\",\"error\":\"cancelled before every "
                + "rank had saved\",\"devices\":[[1,0]],\"atStep\":40,\"generation\":null,\"from\":null,"
                + "\"phaseMillis\":{\"total\":T},\"events\":[\"Ts stop flag raised for step 40; waiting for every rank "
                + "to save (generation after none)\",\"Ts failed: cancelled before every rank had saved\","
                + "\"Ts stop flag cleared\"]}", masked(cancelled));
    }
}
