package io.tenplex.server.streams;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.datasets.streams.Policy;
import io.tenplex.datasets.streams.StreamConfig;
import io.tenplex.datasets.streams.StreamSpec;
import io.tenplex.server.ControlHandler.Response;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The JSON of the stream routes (snake_case): a stream's config ({@code policy}, {@code capacity},
 * {@code threshold}, {@code max_sample_bytes}, {@code producers}, {@code seed}, {@code ranks} or
 * {@code dp}, and {@code daemons}: other daemons that relay), a re-partitioning's {@code ranks}, and the status answers.
 */
final class StreamJson {
    static final ObjectMapper JSON = new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    /** The largest sample a stream takes unless its config says otherwise. */
    static final int DEFAULT_MAX_SAMPLE_BYTES = 1 << 20;

    private StreamJson() {
    }

    static JsonNode read(byte[] body) {
        try {
            JsonNode n = JSON.readTree(body);
            if (n == null || !n.isObject()) {
                throw new IllegalArgumentException("bad stream request: the body is not a JSON object");
            }
            return n;
        } catch (IOException e) {
            throw new IllegalArgumentException("bad stream request: the body is not JSON");
        }
    }

    /** A config from a request; without {@code ranks}, {@code dp} ranks (default 1) all at {@code self}. */
    static StreamConfig config(JsonNode n, String self) {
        StreamSpec spec = new StreamSpec(Policy.parse(text(n, "policy")), integer(n, "capacity", -1),
                integer(n, "threshold", 0), integer(n, "max_sample_bytes", DEFAULT_MAX_SAMPLE_BYTES),
                integer(n, "producers", 0), seed(n));
        List<String> ranks = n.has("ranks") ? ranks(n) : null;
        if (ranks == null) {
            int dp = integer(n, "dp", 1);
            if (dp < 1 || dp > StreamConfig.MAX_RANKS) {
                throw new IllegalArgumentException("dp " + dp + " (expected: 1 to " + StreamConfig.MAX_RANKS + ")");
            }
            ranks = java.util.Collections.nCopies(dp, self);
        }
        List<String> others = n.has("daemons") ? addresses(n, "daemons") : List.of();
        return new StreamConfig(spec, ranks, others, integer(n, "closes", 0), n.path("ended").asBoolean(false));
    }

    /** A request's {@code ranks}: one {@code host:port} per data-parallel rank. */
    static List<String> ranks(JsonNode n) {
        return addresses(n, "ranks");
    }

    private static List<String> addresses(JsonNode n, String f) {
        JsonNode r = n.get(f);
        if (r == null || !r.isArray() || r.size() == 0 || r.size() > StreamConfig.MAX_RANKS) {
            throw new IllegalArgumentException("'" + f + "' must be a list of 1 to " + StreamConfig.MAX_RANKS
                    + " daemon addresses (host:port)");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode a : r) {
            if (!a.isTextual()) {
                throw new IllegalArgumentException("'" + f + "' must list daemon addresses as strings, not " + a);
            }
            out.add(a.asText());
        }
        return out;
    }

    private static long seed(JsonNode n) {
        JsonNode v = n.get("seed");
        if (v != null && (!v.isIntegralNumber() || !v.canConvertToLong())) {
            throw new IllegalArgumentException("'seed' must be an integer, not " + v);
        }
        return v == null ? 0 : v.asLong();
    }

    /** A re-partitioning's export request: the ranks the coordinator knows. */
    static byte[] ranks(List<String> ranks) {
        ObjectNode n = JSON.createObjectNode();
        ArrayNode a = n.putArray("ranks");
        ranks.forEach(a::add);
        return n.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    static byte[] config(StreamConfig c) {
        StreamSpec s = c.spec();
        ObjectNode n = JSON.createObjectNode().put("policy", s.policy().wireName()).put("capacity", s.capacity())
                .put("threshold", s.threshold()).put("max_sample_bytes", s.maxSampleBytes())
                .put("producers", s.producers()).put("seed", s.seed()).put("closes", c.closes())
                .put("ended", c.ended());
        ArrayNode ranks = n.putArray("ranks");
        c.ranks().forEach(ranks::add);
        if (!c.others().isEmpty()) {
            ArrayNode others = n.putArray("daemons");
            c.others().forEach(others::add);
        }
        return n.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String text(JsonNode n, String f) {
        JsonNode v = n.get(f);
        if (v == null || !v.isTextual()) {
            throw new IllegalArgumentException("missing '" + f + "' (a string)");
        }
        return v.asText();
    }

    private static int integer(JsonNode n, String f, int dflt) {
        JsonNode v = n.get(f);
        if (v == null && dflt >= 0) {
            return dflt;
        }
        if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new IllegalArgumentException("'" + f + "' must be an integer" + (v == null ? "" : ", not " + v));
        }
        return v.asInt();
    }

    /** A status answer with this daemon's stream memory: {@code "memory": {"budget", "used"}} in bytes. */
    static JsonNode withMemory(io.tenplex.datasets.streams.StreamStatus s,
            io.tenplex.datasets.streams.StreamMemory memory) {
        ObjectNode n = JSON.valueToTree(s);
        n.putObject("memory").put("budget", memory.budget()).put("used", memory.used());
        return n;
    }

    static Response ok(int status, Object answer) {
        try {
            return new Response(status, "application/json", JSON.writeValueAsBytes(answer));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A 429 whose {@code Retry-After} says when to push again. */
    static Response retry(String reason, int seconds) {
        Response t = Response.text(429, reason);
        return new Response(429, t.contentType(), t.body(), Map.of("Retry-After", Integer.toString(seconds)));
    }
}
