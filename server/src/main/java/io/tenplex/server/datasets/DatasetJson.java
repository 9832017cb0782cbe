package io.tenplex.server.datasets;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.datasets.LoadStatus;
import io.tenplex.datasets.MountInfo;
import io.tenplex.datasets.MountStatus;
import io.tenplex.server.ControlHandler.Response;
import java.io.IOException;

/**
 * The JSON of the dataset answers: a mount's fields at the top level, its loading under
 * {@code load} ({@code error} only while there is one), and after a mount the view's {@code head}.
 */
final class DatasetJson {
    private static final ObjectMapper JSON = new ObjectMapper().addMixIn(LoadStatus.class, LoadStatusJson.class);

    private DatasetJson() {}

    /** The answer of {@code GET /api/v1/datasets/<job>}. */
    record StatusAnswer(@JsonUnwrapped MountInfo mount, LoadStatus load) {
        static StatusAnswer of(MountStatus s) {
            return new StatusAnswer(s.mount(), s.load());
        }
    }

    /** The answer of a mount: the status and the view's entry point. */
    record MountAnswer(@JsonUnwrapped MountInfo mount, LoadStatus load, String head) {
        static MountAnswer of(MountStatus s) {
            return new MountAnswer(s.mount(), s.load(), s.mount().head());
        }
    }

    /** Leaves {@code error} out of the loading status while there is none. */
    private abstract static class LoadStatusJson {
        @JsonInclude(JsonInclude.Include.NON_NULL)
        abstract String error();
    }

    static JsonNode read(byte[] body) {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            throw new IllegalArgumentException("bad mount request: the body is not JSON");
        }
    }

    static Response ok(Object answer) {
        try {
            return new Response(200, "application/json", JSON.writeValueAsBytes(answer));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
