package io.tenplex.server.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Pins the JSON text of the job routes' answers and of the bodies one daemon sends another (field
 * order, absent fields), serialised by a plain {@link ObjectMapper}: the wire must not change silently.
 */
class JobWireJsonTest {
    private final ObjectMapper json = new ObjectMapper();

    private String text(Object o) throws Exception {
        return json.writeValueAsString(o);
    }

    @Test
    void sealAnswer_hasAnErrorOnlyWhenDaemonsWereNotTold() throws Exception {
        assertEquals("{\"step\":10,\"rank\":1,\"world\":4,\"tensors\":3,\"bytes\":4096,\"complete\":false}",
                text(new JobRoutes.SealAnswer(10, 1, 4, 3, 4096, false, null)));
        assertEquals("{\"step\":10,\"rank\":1,\"world\":4,\"tensors\":3,\"bytes\":4096,\"complete\":true,\"error\":\"e\"}",
                text(new JobRoutes.SealAnswer(10, 1, 4, 3, 4096, true, "e")));
    }

    @Test
    void startedAnswers_completeAndParallelized() throws Exception {
        assertEquals("{\"plan\":\"p1\",\"status\":\"/api/v1/jobs/j/reconfigurations/p1\"}",
                text(new JobRoutes.Started("p1", "/api/v1/jobs/j/reconfigurations/p1")));
        assertEquals("{\"id\":\"r1\",\"status\":\"/s\"}", text(new JobRoutes.ChangeStarted("r1", "/s")));
        assertEquals("{\"complete\":true}", text(new JobRoutes.Complete(true)));
        assertEquals("{\"tp\":2,\"pp\":1,\"dp\":4,\"parallelizer\":\"table\"}",
                text(new JobRoutes.Parallelized(2, 1, 4, "table")));
    }

    @Test
    void sealedRequest_leavesOutAMissingConfig_butWritesANullOne() throws Exception {
        assertEquals("{\"ranks\":[0,3],\"world\":4}", text(new HttpDaemonClient.SealedRequest(List.of(0, 3), 4, null)));
        assertEquals("{\"ranks\":[1],\"world\":2,\"config\":null}",
                text(new HttpDaemonClient.SealedRequest(List.of(1), 2, NullNode.getInstance())));
        assertEquals("{\"ranks\":[1],\"world\":2,\"config\":{\"tp\":2}}",
                text(new HttpDaemonClient.SealedRequest(List.of(1), 2, json.readTree("{\"tp\":2}"))));
    }

    @Test
    void raiseStopRequest_leavesOutTheStepToStopAtOnce() throws Exception {
        assertEquals("{\"reason\":\"now\"}", text(new HttpDaemonClient.RaiseStopRequest(null, "now")));
        assertEquals("{\"atStep\":40,\"reason\":\"r\"}", text(new HttpDaemonClient.RaiseStopRequest(40L, "r")));
    }
}
