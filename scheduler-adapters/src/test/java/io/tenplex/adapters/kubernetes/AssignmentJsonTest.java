package io.tenplex.adapters.kubernetes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.kubernetes.PodMembership.Member;
import io.tenplex.adapters.kubernetes.PodMembership.Membership;
import io.tenplex.adapters.kubernetes.PodMembership.Node;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Pins the text of the published assignment ({@code /job/<job>/kubernetes/assignment.json}, read by
 * relaunched ranks and by a restarted adapter): field order, null fields, the master address.
 */
class AssignmentJsonTest {
    private final ObjectMapper json = new ObjectMapper();

    private static Membership twoNodes() {
        return new Membership(List.of(new Node("node-a", "10.0.0.1", 2, List.of(new Member("a0", 2, "10.244.1.10"))),
                new Node("node-b", "10.0.0.2", 1, List.of(new Member("b0", 1, null)))), Map.of());
    }

    @Test
    void assignment_withAConfig_afterAChange() throws Exception {
        Workers workers = new Workers(7000);
        Membership m = twoNodes();
        workers.number(m);
        String text = json.writeValueAsString(workers.assignment("j", m, json.readTree("{\"tp\":1,\"pp\":1,\"dp\":3,"
                + "\"devices\":[[9,9]]}"), "r1", json.readTree("20")));
        assertEquals("{\"job\":\"j\",\"change\":\"r1\",\"generation\":20,\"config\":{\"tp\":1,\"pp\":1,\"dp\":3,"
                + "\"devices\":[[0,0],[0,1],[1,0]]},\"worldSize\":3,\"devicesPerWorker\":2,\"workers\":["
                + "{\"worker\":0,\"node\":\"node-a\",\"address\":\"10.0.0.1:7000\",\"devices\":2},"
                + "{\"worker\":1,\"node\":\"node-b\",\"address\":\"10.0.0.2:7000\",\"devices\":1}],\"pods\":["
                + "{\"pod\":\"a0\",\"node\":\"node-a\",\"worker\":0,\"local\":[0,1],\"ranks\":[0,1]},"
                + "{\"pod\":\"b0\",\"node\":\"node-b\",\"worker\":1,\"local\":[0],\"ranks\":[2]}],"
                + "\"masterAddr\":\"10.244.1.10\"}", text);
    }

    @Test
    void assignment_withoutAConfig_orPods_writesNulls_andNoMasterAddress() throws Exception {
        Workers workers = new Workers(7000);
        workers.number(twoNodes());
        Membership gone = new Membership(List.of(), Map.of());
        String text = json.writerWithDefaultPrettyPrinter().writeValueAsString(workers.assignment("j", gone, null,
                null, null));
        assertEquals("{\n  \"job\" : \"j\",\n  \"change\" : null,\n  \"generation\" : null,\n  \"config\" : null,\n"
                + "  \"worldSize\" : 0,\n  \"devicesPerWorker\" : 1,\n  \"workers\" : [ {\n    \"worker\" : 0,\n"
                + "    \"node\" : \"node-a\",\n    \"address\" : \"10.0.0.1:7000\",\n    \"devices\" : 0\n  }, {\n"
                + "    \"worker\" : 1,\n    \"node\" : \"node-b\",\n    \"address\" : \"10.0.0.2:7000\",\n"
                + "    \"devices\" : 0\n  } ],\n  \"pods\" : [ ]\n}", text.replace("\r\n", "\n"));
    }
}
