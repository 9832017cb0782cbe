package io.tenplex.server.datasets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.datasets.rehearsal.RehearsalConfig;
import io.tenplex.datasets.rehearsal.RehearsalPeers;
import io.tenplex.jobs.common.Limits;
import io.tenplex.server.ControlHandler.Response;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JSON of the rehearsal routes: a buffer's configuration, the counts a daemon holds (daemon to
 * daemon), a re-partition's targets and a daemon's moves. Every count and size read is checked
 * against its limit (ranks, classes, representatives per rank) before anything is sized by it.
 */
final class RehearsalJson {
    static final ObjectMapper JSON = new ObjectMapper();

    private RehearsalJson() {
    }

    static JsonNode read(byte[] body) {
        try {
            JsonNode n = JSON.readTree(body);
            if (n == null || !n.isObject()) {
                throw new IllegalArgumentException("bad rehearsal request: the body must be a JSON object");
            }
            return n;
        } catch (IOException e) {
            throw new IllegalArgumentException("bad rehearsal request: the body is not JSON");
        }
    }

    static Response ok(int status, Object answer) {
        try {
            return new Response(status, "application/json", JSON.writeValueAsBytes(answer));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code {classes, perClass, candidates, batch, seed}} (seed optional, 0). */
    static RehearsalConfig config(JsonNode b) {
        return new RehearsalConfig(intOf(b, "classes"), intOf(b, "perClass"), intOf(b, "candidates"),
                intOf(b, "batch"), b.path("seed").canConvertToLong() ? b.get("seed").asLong() : 0);
    }

    static ObjectNode write(RehearsalConfig c) {
        return JSON.createObjectNode().put("classes", c.classes()).put("perClass", c.perClass())
                .put("candidates", c.candidates()).put("batch", c.batch()).put("seed", c.seed());
    }

    static ObjectNode counts(RehearsalPeers.Counts c) {
        ObjectNode n = JSON.createObjectNode().put("daemon", c.daemon());
        n.set("config", c.config() == null ? null : write(c.config()));
        ObjectNode ranks = n.putObject("ranks");
        c.ranks().forEach((r, counts) -> {
            ArrayNode a = ranks.putArray(Integer.toString(r));
            for (int x : counts) {
                a.add(x);
            }
        });
        return n;
    }

    /** A daemon's counts, each checked: ranks, one count per class, each within S. */
    static RehearsalPeers.Counts counts(JsonNode n) {
        JsonNode cfg = n.path("config");
        RehearsalConfig config = cfg.isObject() ? config(cfg) : null;
        JsonNode ranks = n.path("ranks");
        if (!n.path("daemon").isTextual() || !ranks.isObject() || ranks.size() > Limits.MAX_RANKS
                || (config == null && ranks.size() > 0)) {
            throw new IllegalArgumentException("bad rehearsal counts: " + abbreviate(n));
        }
        Map<Integer, int[]> out = new TreeMap<>();
        for (var e : (Iterable<Map.Entry<String, JsonNode>>) ranks::fields) {
            JsonNode a = e.getValue();
            if (!a.isArray() || a.size() != config.classes()) {
                throw new IllegalArgumentException("bad rehearsal counts of rank " + e.getKey() + ": expected "
                        + config.classes() + " classes");
            }
            int[] c = new int[a.size()];
            for (int i = 0; i < c.length; i++) {
                c[i] = a.get(i).asInt(-1);
                if (c[i] < 0 || c[i] > config.perClass()) {
                    throw new IllegalArgumentException("bad rehearsal count " + a.get(i) + " (expected 0 to "
                            + config.perClass() + ")");
                }
            }
            out.put(rank(e.getKey()), c);
        }
        return new RehearsalPeers.Counts(n.get("daemon").asText(), config, out);
    }

    /** {@code {"ranks": {"<rank>": "host:port", ...}}}: new data-parallel rank to its daemon. */
    static Map<Integer, String> targets(JsonNode b) {
        JsonNode ranks = b.path("ranks");
        if (!ranks.isObject() || ranks.isEmpty() || ranks.size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"ranks\" must map 1 to " + Limits.MAX_RANKS
                    + " data-parallel ranks to daemon addresses");
        }
        Map<Integer, String> out = new TreeMap<>();
        for (var e : (Iterable<Map.Entry<String, JsonNode>>) ranks::fields) {
            if (!e.getValue().isTextual() || e.getValue().asText().isBlank()) {
                throw new IllegalArgumentException("rank " + e.getKey() + ": the daemon must be an address string");
            }
            out.put(rank(e.getKey()), e.getValue().asText());
        }
        return out;
    }

    static ObjectNode moves(RehearsalPeers.Moves m) {
        ObjectNode n = JSON.createObjectNode();
        n.set("config", write(m.config()));
        List<String> ids = new ArrayList<>(m.daemons().keySet());
        ArrayNode ds = n.putArray("daemons");
        ids.forEach(id -> ds.addObject().put("id", id).put("address", m.daemons().get(id)));
        ObjectNode ranks = n.putObject("ranks");
        m.ranks().forEach((r, refs) -> {
            ArrayNode a = ranks.putArray(Integer.toString(r));
            refs.forEach(x -> a.addArray().add(ids.indexOf(x.daemon())).add(x.slot().rank()).add(x.slot().cls())
                    .add(x.slot().slot()));
        });
        return n;
    }

    static RehearsalPeers.Moves moves(JsonNode n) {
        RehearsalConfig config = config(n.path("config"));
        JsonNode ds = n.path("daemons");
        JsonNode ranks = n.path("ranks");
        if (!ds.isArray() || ds.size() > Limits.MAX_RANKS || !ranks.isObject() || ranks.size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("bad rehearsal moves: daemons and ranks (at most " + Limits.MAX_RANKS
                    + " each) are needed");
        }
        List<String> ids = new ArrayList<>();
        Map<String, String> daemons = new LinkedHashMap<>();
        for (JsonNode d : ds) {
            ids.add(d.path("id").asText());
            daemons.put(d.path("id").asText(), d.path("address").asText());
        }
        Map<Integer, List<RehearsalPeers.Ref>> out = new TreeMap<>();
        long most = (long) config.classes() * config.perClass();
        for (var e : (Iterable<Map.Entry<String, JsonNode>>) ranks::fields) {
            if (!e.getValue().isArray() || e.getValue().size() > most) {
                throw new IllegalArgumentException("rank " + e.getKey() + ": at most " + most + " representatives");
            }
            List<RehearsalPeers.Ref> refs = new ArrayList<>(e.getValue().size());
            for (JsonNode x : e.getValue()) {
                int d = x.path(0).asInt(-1);
                if (!x.isArray() || x.size() != 4 || d < 0 || d >= ids.size()) {
                    throw new IllegalArgumentException("bad rehearsal move " + x);
                }
                refs.add(new RehearsalPeers.Ref(ids.get(d), new RehearsalPeers.Slot(x.get(1).asInt(), x.get(2).asInt(),
                        x.get(3).asInt())));
            }
            out.put(rank(e.getKey()), refs);
        }
        return new RehearsalPeers.Moves(config, daemons, out);
    }

    static int rank(String s) {
        try {
            int r = Integer.parseInt(s);
            if (r >= 0 && r < Limits.MAX_RANKS) {
                return r;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("rank '" + s + "' (expected: 0 <= rank < " + Limits.MAX_RANKS + ")");
    }

    private static int intOf(JsonNode b, String f) {
        JsonNode v = b.get(f);
        if (v == null || !v.canConvertToInt()) {
            throw new IllegalArgumentException("\"" + f + "\" must be an integer, got " + v);
        }
        return v.asInt();
    }

    private static String abbreviate(JsonNode n) {
        String s = n.toString();
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
