package io.tenplex.server.datasets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.datasets.LoadStatus;
import io.tenplex.datasets.MountInfo;
import io.tenplex.datasets.MountStatus;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The dataset answers keep the JSON shape clients read: mount fields at the top, loading under load. */
class DatasetJsonTest {
    private static final MountStatus STATUS = new MountStatus(new MountInfo("j", 16, 8, 3, 3, true, 5, 60, 0, 5, 4,
            List.of(3, 3, 2), List.of(0, 2)), new LoadStatus("loading", 1, 2, 3, 4, 5, 6, 7, null, null, 8, 0.5, 0.25,
            null));

    private static JsonNode json(Object answer) throws Exception {
        return new ObjectMapper().readTree(DatasetJson.ok(answer).body());
    }

    @Test
    void statusAnswer_hasTheMountAtTheTop_andLeavesOutAnAbsentError() throws Exception {
        JsonNode s = json(DatasetJson.StatusAnswer.of(STATUS));
        for (String f : List.of("job", "progress", "globalBatch", "dpSize", "seed", "shuffle", "samplesPerFile",
                "samples", "epoch", "batches", "dropped", "localBatch", "ranks", "load")) {
            assertTrue(s.has(f), f + " missing in " + s);
        }
        assertEquals(14, s.size(), s.toString());
        assertEquals("[3,3,2]", s.path("localBatch").toString());
        JsonNode load = s.path("load");
        assertTrue(load.has("firstBatchReadyMillis") && load.get("firstBatchReadyMillis").isNull(), load.toString());
        assertFalse(load.has("error"), load.toString());
        assertEquals(6, load.path("fromPeers").asInt());
        assertEquals(5, load.path("fromPreviousMount").asInt());
    }

    @Test
    void mountAnswer_addsTheHead_andAnErrorShowsWhileThereIsOne() throws Exception {
        LoadStatus failing = new LoadStatus("loading", 0, 2, 0, 4, 0, 0, 0, 1.5, null, 0, 0, 0, "reading sample 3");
        JsonNode m = json(DatasetJson.MountAnswer.of(new MountStatus(STATUS.mount(), failing)));
        assertEquals("/job/j/head.txt", m.path("head").asText());
        assertEquals("reading sample 3", m.path("load").path("error").asText());
        assertEquals(1.5, m.path("load").path("firstBatchReadyMillis").asDouble());
    }
}
