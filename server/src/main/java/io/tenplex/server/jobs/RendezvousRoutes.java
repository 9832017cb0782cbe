package io.tenplex.server.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.rendezvous.Rendezvous;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.Limits;
import io.tenplex.server.ControlHandler;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * {@code /api/v1/jobs/<job>/rendezvous} (the job routes hand it over): the torchrun rendezvous of a job
 * ({@link Rendezvous}). {@code GET ?node=&secret=} the run as a node sees it (hearing from the node: the
 * secret its first join answered; {@code &brief=true}: without members, configuration and events, what the
 * agents poll);
 * {@code POST .../join} a node asks for the next round; {@code POST .../store} node 0 of a round says where
 * its store is; {@code POST .../target} a scheduler sets how many nodes the job has; {@code POST .../close}
 * a node of the run (with its secret) says the job ended. A malformed request is a 400, a run the daemon does not hold a 404, a closed run or a
 * node that is not node 0, or a node's call without its secret, a 409; nothing changes then.
 */
public final class RendezvousRoutes implements ControlHandler {
    public static final String SEGMENT = "rendezvous";
    private static final double DEFAULT_LAST_CALL = 1;
    private static final double DEFAULT_KEEP_ALIVE = 15;

    private final Rendezvous rendezvous;
    private final java.util.function.Supplier<String> self;
    /** Strict: a body with data after its object, or a key given twice, is refused rather than half read. */
    private final ObjectMapper json = new ObjectMapper()
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
    /** The longest {@code host:port} taken (a longer one is refused without being echoed). */
    private static final int MAX_ADDRESS = 300;

    /** @param self this daemon's {@code host:port}: a node's daemon when it names none */
    public RendezvousRoutes(Rendezvous rendezvous, java.util.function.Supplier<String> self) {
        this.rendezvous = rendezvous;
        this.self = self;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            return CompletableFuture.completedFuture(answer(req));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private Response answer(Request req) {
        String[] p = req.path().split("/"); // "", api, v1, jobs, <job>, rendezvous[, what]
        String job = p[4];
        String what = p.length == 6 ? "" : p.length == 7 ? p[6] : null;
        if (what == null || !p[5].equals(SEGMENT)) {
            throw StoreException.notFound("no rendezvous route " + req.method() + " " + req.path());
        }
        boolean post = req.method().equals("POST");
        if (what.isEmpty() && req.method().equals("GET")) {
            String node = req.param("node");
            return json(rendezvous.status(job, node == null ? null : Rendezvous.node(node), req.param("secret"),
                    "true".equals(req.param("brief"))));
        }
        if (!post || what.isEmpty()) {
            return Response.text(405, req.method() + " not allowed on " + req.path() + " (GET .../rendezvous, POST "
                    + ".../rendezvous/join, /store, /target, /close)");
        }
        if (!java.util.Set.of("join", "store", "target", "close").contains(what)) {
            throw StoreException.notFound("no rendezvous route POST " + req.path() + " (join, store, target, close)");
        }
        JsonNode b = body(req);
        return switch (what) {
            case "join" -> json(rendezvous.join(job, join(b)));
            case "store" -> json(rendezvous.store(job, Rendezvous.node(text(b, "node")), optional(b, "secret"),
                    integer(b, "round", 1, Integer.MAX_VALUE), address(text(b, "address"))));
            case "target" -> json(rendezvous.target(job, integer(b, "nodes", 1, Integer.MAX_VALUE)));
            case "close" -> json(rendezvous.close(job, Rendezvous.node(text(b, "node")), optional(b, "secret")));
            default -> throw StoreException.notFound("no rendezvous route POST " + req.path()
                    + " (join, store, target, close)");
        };
    }

    private Rendezvous.Join join(JsonNode b) {
        String daemon = b.has("daemon") ? address(text(b, "daemon")) : self.get();
        return new Rendezvous.Join(text(b, "node"), optional(b, "secret"), integer(b, "nproc", 1, Integer.MAX_VALUE),
                daemon, integer(b, "minNodes", 1, Integer.MAX_VALUE), integer(b, "maxNodes", 1, Integer.MAX_VALUE),
                seconds(b, "lastCallSeconds", DEFAULT_LAST_CALL), seconds(b, "keepAliveSeconds", DEFAULT_KEEP_ALIVE));
    }

    private JsonNode body(Request req) {
        try {
            JsonNode b = json.readTree(req.body());
            if (b == null || !b.isObject()) {
                throw new IllegalArgumentException("a rendezvous request is a JSON object");
            }
            return b;
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("a rendezvous request must be JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String text(JsonNode b, String f) {
        JsonNode v = b.get(f);
        if (v == null || !v.isTextual()) {
            throw new IllegalArgumentException("\"" + f + "\" must be a string");
        }
        return v.asText();
    }

    private static String optional(JsonNode b, String f) {
        return b.has(f) ? text(b, f) : null;
    }

    /** A required integer field in [min, max] (the project's check, which abbreviates what it quotes). */
    private static int integer(JsonNode b, String f, int min, int max) {
        return Limits.intIn(b, f, min - 1, min, max, "");
    }

    private static double seconds(JsonNode b, String f, double dflt) {
        JsonNode v = b.get(f);
        if (v == null) {
            return dflt;
        }
        if (!v.isNumber()) {
            throw new IllegalArgumentException("\"" + f + "\" must be a number of seconds, got " + v);
        }
        return v.asDouble();
    }

    private static String address(String hostPort) {
        if (hostPort.length() > MAX_ADDRESS) {
            throw new IllegalArgumentException("an address is host:port of at most " + MAX_ADDRESS + " characters, got "
                    + hostPort.length());
        }
        DaemonClient.address(hostPort); // host:port, or refused
        return hostPort;
    }

    private Response json(Object o) {
        try {
            return new Response(200, "application/json", json.writeValueAsString(o).getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
