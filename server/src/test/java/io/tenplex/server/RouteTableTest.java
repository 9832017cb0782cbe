package io.tenplex.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.DType;
import io.tenplex.ptc.TensorMeta;
import io.tenplex.store.DeleteCounts;
import io.tenplex.store.Entry;
import io.tenplex.store.EntryType;
import io.tenplex.store.StorePath;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The route table gives every path its route and label; replies keep the JSON field names and order. */
class RouteTableTest {
    private final ObjectMapper json = new ObjectMapper();

    private static String label(Router r, String path) {
        Route route = r.find(path);
        return route == null ? Router.UNKNOWN : route.label;
    }

    @Test
    void labels_comeFromTheTable_controlsIncluded() {
        Router r = new Router();
        ControlHandler h = req -> CompletableFuture.completedFuture(ControlHandler.Response.text(200, "ok"));
        r.addControl("/api/v1/jobs/", Router.labelOf("/api/v1/jobs/"), h);
        r.addControl("/api/v1/datasets/", Router.labelOf("/api/v1/datasets/"), h);
        r.addControl("/stop", Router.labelOf("/stop"), h);
        Map<String, String> expected = Map.ofEntries(Map.entry("/upload", "upload"), Map.entry("/upload1", "upload"),
                Map.entry("/query", "query"), Map.entry("/delete", "delete"), Map.entry("/delete1", "delete"),
                Map.entry("/metrics", "metrics"), Map.entry("/api/v1/health", "health"),
                Map.entry("/api/v1/tensors/job/a/w", "tensors"), Map.entry("/api/v1/files", "files"),
                Map.entry("/api/v1/dirs/", "dirs"), Map.entry("/api/v1/stat/x", "stat"),
                Map.entry("/api/v1/checksums/x", "checksums"), Map.entry("/api/v1/jobs/j/stop", "jobs"),
                Map.entry("/api/v1/datasets/j", "datasets"), Map.entry("/stop", "stop"),
                Map.entry("/api/v1/tensorsX/a", "not_found"), Map.entry("/api/v1/other", "not_found"),
                Map.entry("/nowhere", "not_found"), Map.entry("/metrics/x", "not_found"));
        expected.forEach((path, label) -> assertEquals(label, label(r, path), path));
        assertNull(r.find("/api/v1"));
        assertTrue(r.find("/api/v1/health").isOpen());
        assertFalse(r.find("/api/v1/tensors/x").isOpen());
    }

    @Test
    void replies_keepTheirJsonShape() throws Exception {
        TensorMeta meta = TensorMeta.of(DType.F32, 2, 3);
        assertEquals("{\"path\":\"/j/w\",\"name\":\"w\",\"type\":\"tensor\",\"size\":24,\"dtype\":\"f32\",\"shape\":[2,3]}",
                json.writeValueAsString(Replies.EntryReply.of(new Entry(StorePath.parse("/j/w"), EntryType.TENSOR,
                        24, meta, 0))));
        assertEquals("{\"path\":\"/j\",\"name\":\"j\",\"type\":\"dir\",\"children\":2}",
                json.writeValueAsString(Replies.EntryReply.of(new Entry(StorePath.parse("/j"), EntryType.DIR, 0, null,
                        2))));
        assertEquals("{\"path\":\"/\",\"entries\":[{\"path\":\"/f\",\"name\":\"f\",\"type\":\"file\",\"size\":1}]}",
                json.writeValueAsString(Replies.Listing.of("/", List.of(new Entry(StorePath.parse("/f"),
                        EntryType.FILE, 1, null, 0)))));
        assertEquals("{\"deletedBytes\":9,\"files\":3,\"dirs\":2}",
                json.writeValueAsString(Replies.Deleted.of(new DeleteCounts(3, 2, 9))));
        assertEquals("{\"status\":\"ok\"}", json.writeValueAsString(Replies.Health.OK));
        assertEquals("{\"path\":\"/f\",\"size\":0,\"algorithm\":\"crc32c\",\"blockSize\":64,\"crc32c\":null,"
                + "\"blocks\":[]}", json.writeValueAsString(new Replies.Checksums("/f", 0, "crc32c", 64, null,
                        List.of())));
    }
}
