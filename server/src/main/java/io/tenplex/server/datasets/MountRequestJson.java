package io.tenplex.server.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import io.tenplex.datasets.MountChecks;
import io.tenplex.datasets.MountRequest;
import io.tenplex.ptc.data.MountParams;
import java.util.ArrayList;
import java.util.List;

/**
 * The JSON body of {@code POST /api/v1/datasets/<job>/mount} as a {@link MountRequest}: {@code index}
 * or {@code indexText}, {@code progress}, {@code globalBatch}, {@code dpSize}, {@code seed},
 * {@code shuffle}, {@code samplesPerFile}, {@code ranks} and {@code peers} (docs/DATASETS.md). Every
 * malformed field is a 400 that names it.
 */
final class MountRequestJson {
    private MountRequestJson() {}

    static MountRequest parse(JsonNode b) {
        int dp = need(b, "dpSize");
        MountChecks.checkDpSize(dp); // before any other field: its message names the value and the limit
        MountParams params = MountChecks.params(optLong(b, "progress", 0), need(b, "globalBatch"), dp,
                optLong(b, "seed", 0), b.path("shuffle").asBoolean(true), optInt(b, "samplesPerFile", 1024));
        List<Integer> ranks = ranks(b, dp);
        List<String> peers = peers(b);
        String text = b.hasNonNull("indexText") ? b.get("indexText").asText() : null;
        String index = text == null && b.hasNonNull("index") ? b.get("index").asText() : null;
        return new MountRequest(index, text, params, ranks, peers);
    }

    private static List<Integer> ranks(JsonNode b, int dp) {
        if (!b.has("ranks")) {
            return null;
        }
        if (!b.get("ranks").isArray()) {
            throw new IllegalArgumentException("'ranks' must be an array of ranks");
        }
        List<Integer> ranks = new ArrayList<>();
        for (JsonNode n : b.get("ranks")) {
            if (!n.canConvertToInt() || n.asInt() < 0 || n.asInt() >= dp) {
                throw new IllegalArgumentException("rank " + n + " outside the data-parallel size " + dp
                        + " (expected: 0 <= rank < " + dp + ")");
            }
            ranks.add(n.asInt());
        }
        return ranks;
    }

    private static List<String> peers(JsonNode b) {
        if (!b.has("peers")) {
            return null;
        }
        if (!b.get("peers").isArray()) {
            throw new IllegalArgumentException("'peers' must be an array of \"host:port\"");
        }
        List<String> out = new ArrayList<>();
        b.get("peers").forEach(n -> out.add(n.asText()));
        return out;
    }

    private static int need(JsonNode b, String field) {
        if (!b.path(field).canConvertToInt() || !b.get(field).isIntegralNumber()) {
            throw new IllegalArgumentException("mount request needs an integer '" + field + "' (at most "
                    + Integer.MAX_VALUE + ")");
        }
        return b.get(field).asInt();
    }

    private static int optInt(JsonNode b, String field, int dflt) {
        return b.has(field) ? need(b, field) : dflt;
    }

    private static long optLong(JsonNode b, String field, long dflt) {
        if (!b.has(field)) {
            return dflt;
        }
        if (!b.get(field).isIntegralNumber() || !b.get(field).canConvertToLong()) {
            throw new IllegalArgumentException("'" + field + "' must be an integer (at most " + Long.MAX_VALUE + ")");
        }
        return b.get(field).asLong();
    }
}
