package io.tenplex.server.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.ConfigJson;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.Limits;
import io.tenplex.jobs.reconfigure.FlowRates;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.ReconfigureRequest;
import io.tenplex.server.ControlHandler.Request;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/** The JSON bodies and path parameters of the job routes, parsed and checked into typed values. */
final class JobRequests {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JobRequests() {
    }

    /** The body as a JSON object (an empty body is an empty object). */
    static JsonNode object(Request req) throws IOException {
        JsonNode b = req.body().length == 0 ? JSON.createObjectNode() : JSON.readTree(req.body());
        if (b == null || !b.isObject()) {
            throw new IllegalArgumentException("expected a JSON object body");
        }
        return b;
    }

    static long step(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("step '" + s + "' is not a number");
        }
    }

    static int rank(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rank '" + s + "' is not a number");
        }
    }

    /** {@code world}: the number of ranks that seal a save (required). */
    static int world(JsonNode b) {
        if (!b.has("world")) {
            throw new IllegalArgumentException("\"world\" (the number of ranks that save) is required");
        }
        return Limits.intIn(b, "world", 0, 1, Limits.MAX_RANKS, "");
    }

    /**
     * {@code entries} (optional): how many tensors and files the rank wrote below {@code save/<rank>}
     * before its seal; the seal refuses a tree that holds another number.
     */
    static java.util.OptionalInt entries(JsonNode b) {
        return b.path("entries").isMissingNode() || b.path("entries").isNull() ? java.util.OptionalInt.empty()
                : java.util.OptionalInt.of(Limits.intIn(b, "entries", -1, 0, Integer.MAX_VALUE, ""));
    }

    /** {@code ranks}: a list of integer ranks, at most {@link Limits#MAX_RANKS}. */
    static List<Integer> ranks(JsonNode b) {
        if (b.path("ranks").size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"ranks\" lists " + b.path("ranks").size() + " ranks, over the limit of "
                    + Limits.MAX_RANKS);
        }
        List<Integer> ranks = new ArrayList<>();
        for (JsonNode r : b.path("ranks")) {
            if (!r.isIntegralNumber() || !r.canConvertToInt()) {
                throw new IllegalArgumentException("rank " + Limits.abbreviate(r) + " is not an integer");
            }
            ranks.add(r.intValue());
        }
        return ranks;
    }

    /** The body of {@code POST .../reconfigure}. */
    static ReconfigureRequest reconfigure(String job, Request req) throws IOException {
        JsonNode body = JSON.readTree(req.body());
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("reconfigure needs a JSON object body");
        }
        String model = body.has("model") ? JSON.writeValueAsString(body.get("model")) : null;
        OptionalLong generation = body.has("generation") ? OptionalLong.of(body.get("generation").asLong())
                : OptionalLong.empty();
        OptionalLong step = body.has("step") ? OptionalLong.of(body.path("step").asLong(0)) : OptionalLong.empty();
        int central = body.path("central").asBoolean(false) ? Limits.intIn(body, "centralWorker", 0, 0,
                Limits.MAX_WORKER - 1, "") : -1;
        OptionalLong rate = body.hasNonNull("linkRate") ? OptionalLong.of(FlowRates.parse(body.get("linkRate").asText()))
                : OptionalLong.empty();
        OptionalLong prepared = body.has("preparedTimeoutMillis") ? OptionalLong.of(Limits.intIn(body,
                "preparedTimeoutMillis", 0, 100, Limits.MAX_PREPARED_TIMEOUT_MILLIS, "")) : OptionalLong.empty();
        return new ReconfigureRequest(job, model, body.has("from") ? body.get("from") : null, body.path("to"),
                generation, body.path("source").asText("").equals("save"), step,
                ConfigJson.daemons(body.get("daemons")), checkPlanning(body, central), rate, prepared, coordinator(body));
    }

    /**
     * {@code planning}, kept for requests written when the coordinator could plan every part: only
     * {@code "local"} (every daemon plans its own part, as always now) is accepted.
     *
     * @return {@code central}, once the body's {@code planning} is checked
     */
    private static int checkPlanning(JsonNode body, int central) {
        JsonNode p = body.get("planning");
        if (p == null || p.isNull() || "local".equals(p.textValue()) && central < 0) {
            return central;
        }
        if ("local".equals(p.textValue())) {
            throw new IllegalArgumentException("\"planning\": \"local\" does not cover central mode (Tenplex-Central:"
                    + " the coordinator sends the parts through the central worker)");
        }
        if ("central".equals(p.textValue())) {
            throw new IllegalArgumentException("\"planning\": \"central\" is no more: every daemon plans its own part"
                    + " of a change (docs/ARCHITECTURE.md); for the Tenplex-Central baseline give \"central\": true");
        }
        throw new IllegalArgumentException("\"planning\" must be \"local\" (every daemon plans its own part), not "
                + Limits.abbreviate(p));
    }

    /** {@code coordinator} (host:port, checked), or null for this daemon. */
    private static String coordinator(JsonNode body) {
        if (!body.hasNonNull("coordinator")) {
            return null;
        }
        String a = body.get("coordinator").asText();
        DaemonClient.address(a); // checks host:port
        return a;
    }
}
