package io.tenplex.server.jobs;

import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.common.ChangeSpec;
import io.tenplex.jobs.common.DaemonClient;
import io.tenplex.jobs.common.Limits;
import io.tenplex.server.ControlHandler;
import io.tenplex.server.control.ChangeAnswer;
import io.tenplex.store.StoreException;
import java.util.concurrent.CompletableFuture;

/**
 * The routes of a change every daemon plans its own part of (the job routes hand them over):
 * {@code POST /api/v1/jobs/<job>/changes?worker=W} with a {@code ChangeSpec} (protobuf) plans and
 * starts this daemon's part as worker W (202, with its status and the digest of the change's choices,
 * idempotent per change), or answers 409 with the descriptions it lacks, having started nothing;
 * {@code POST .../changes/ahead?worker=W} plans the part ahead of the change and keeps it (200, with
 * the plan digest; nothing started, the saved layouts not read);
 * {@code PUT /api/v1/jobs/<job>/descriptions/<digest>} keeps a description (a model's, a saved
 * layout's) whose bytes must have that digest (else 400); {@code POST .../trees} answers the layout
 * digests of this daemon's old ranks' saved trees, {@code POST .../digests} the digests of named
 * saved values of them.
 */
public final class ChangeRoutes implements ControlHandler {
    public static final String CHANGES = "changes";
    /** {@code .../changes/ahead}: a change planned ahead. */
    static final String AHEAD = "ahead";
    public static final String DESCRIPTIONS = "descriptions";
    public static final String TREES = "trees";
    public static final String DIGESTS = "digests";
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind
            .ObjectMapper().enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private final Jobs jobs;
    private final PlanningPool planning;

    /** @param planning where a change is decoded and planned (off the event loop) */
    public ChangeRoutes(Jobs jobs, PlanningPool planning) {
        this.jobs = jobs;
        this.planning = planning;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        return planning.submit(() -> CompletableFuture.completedFuture(answer(req)));
    }

    /** @throws java.io.IOException a body that is not a change's definition (400) */
    private Response answer(Request req) throws java.io.IOException {
        String[] p = req.path().split("/"); // "", api, v1, jobs, <job>, changes | descriptions[, digest]
        String job = p[4];
        if (p[5].equals(CHANGES) && (p.length == 6 || (p.length == 7 && p[6].equals(AHEAD)))) {
            if (!req.method().equals("POST")) {
                return Response.text(405, req.method() + " not allowed on " + req.path() + " (POST)");
            }
            return change(job, req, p.length == 7);
        }
        if (p[5].equals(DESCRIPTIONS) && p.length == 7) {
            if (!p[6].matches("[0-9a-f]{64}")) {
                throw new IllegalArgumentException("a description's digest is 64 lowercase hex digits");
            }
            if (req.method().equals("GET")) {
                byte[] b = jobs.own().descriptions().get(p[6]);
                if (b == null) {
                    throw StoreException.notFound("no description " + p[6] + " on this daemon");
                }
                return new Response(200, "application/octet-stream", b);
            }
            if (!req.method().equals("PUT")) {
                return Response.text(405, req.method() + " not allowed on " + req.path() + " (GET, PUT)");
            }
            jobs.own().descriptions().put(p[6], req.body());
            return Response.text(204, "");
        }
        if (p[5].equals(TREES) && p.length == 6) {
            if (!req.method().equals("POST")) {
                return Response.text(405, req.method() + " not allowed on " + req.path() + " (POST)");
            }
            return trees(job, req);
        }
        if (p[5].equals(DIGESTS) && p.length == 6) {
            if (!req.method().equals("POST")) {
                return Response.text(405, req.method() + " not allowed on " + req.path() + " (POST)");
            }
            return digests(job, req);
        }
        throw StoreException.notFound("no route " + req.method() + " " + req.path());
    }

    /**
     * {@code POST .../changes?worker=W}: plans and starts this daemon's part; {@code POST
     * .../changes/ahead?worker=W}: plans it ahead and keeps it (a daemon of a version without the route
     * answers 404, never starting a part).
     */
    private Response change(String job, Request req, boolean ahead) throws java.io.IOException {
        ChangeSpec spec = ChangeSpecCodec.decode(io.tenplex.server.control.ChangeSpec.parseFrom(req.body()));
        if (!spec.job().equals(job)) {
            throw new IllegalArgumentException("change of job " + spec.job() + " posted to job " + job);
        }
        int worker = worker(req.param("worker"));
        DaemonClient.ChangeAnswer a = ahead ? jobs.own().planAhead(spec, worker) : jobs.own().start(spec, worker);
        ChangeAnswer.Builder b = ChangeAnswer.newBuilder().setPlanDigest(a.planDigest()).addAllMissing(a.missing());
        if (a.status() != null) {
            b.setStatus(PlanCodec.encode(a.status()));
        }
        int code = ahead ? (a.missing().isEmpty() ? 200 : 409) : a.status() != null ? 202 : 409;
        return new Response(code, HttpDaemonClient.PROTOBUF, b.build().toByteArray());
    }

    /** {@code POST .../trees {"sourceDir": "gen/30", "ranks": [0, 1]}}: this daemon's ranks' layout digests. */
    private Response trees(String job, Request req) throws java.io.IOException {
        com.fasterxml.jackson.databind.JsonNode b = JSON.readTree(req.body());
        if (b == null || !b.isObject() || !b.path("sourceDir").isTextual() || !b.path("ranks").isArray()
                || b.get("ranks").size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("trees needs {\"sourceDir\": \"...\", \"ranks\": [at most "
                    + Limits.MAX_RANKS + " ranks]}");
        }
        String dir = relative(b.get("sourceDir").textValue(), "sourceDir");
        java.util.List<Integer> ranks = new java.util.ArrayList<>();
        for (com.fasterxml.jackson.databind.JsonNode r : b.get("ranks")) {
            ranks.add(rank(r.isIntegralNumber() && r.canConvertToInt() ? String.valueOf(r.intValue()) : r.toString()));
        }
        var layouts = JSON.createObjectNode();
        jobs.own().describeTrees(job, dir, ranks).forEach((rank, d) -> layouts.put(String.valueOf(rank), d));
        return new Response(200, "application/json", JSON.writeValueAsBytes(JSON.createObjectNode().set("layouts",
                layouts)));
    }

    /**
     * {@code POST .../digests {"sourceDir": "gen/30", "values": {"0": ["rng/state"], ...}}}: the
     * SHA-256 of each named value of this daemon's ranks ({@code ValueDigests}), at most
     * {@code ValueDigests.MAX_PATHS} paths in all.
     */
    private Response digests(String job, Request req) throws java.io.IOException {
        if (req.body().length > io.tenplex.jobs.reconfigure.ValueDigests.MAX_PATH_CHARS * 2L) {
            throw new StoreException(StoreException.Kind.TOO_LARGE, "a digests request is at most "
                    + io.tenplex.jobs.reconfigure.ValueDigests.MAX_PATH_CHARS * 2L + " bytes");
        }
        com.fasterxml.jackson.databind.JsonNode b = JSON.readTree(req.body());
        if (b == null || !b.isObject() || !b.path("sourceDir").isTextual() || !b.path("values").isObject()) {
            throw new IllegalArgumentException("digests needs {\"sourceDir\": \"...\", \"values\": {\"<rank>\": "
                    + "[\"<path>\", ...]}}");
        }
        String dir = relative(b.get("sourceDir").textValue(), "sourceDir");
        java.util.Map<Integer, java.util.List<String>> values = new java.util.TreeMap<>();
        int n = 0;
        for (var it = b.get("values").fields(); it.hasNext();) {
            var e = it.next();
            int rank = rank(e.getKey());
            if (!e.getValue().isArray() || (n += e.getValue().size()) > io.tenplex.jobs.reconfigure.ValueDigests
                    .MAX_PATHS) {
                throw new IllegalArgumentException("values of rank " + rank + " must be a list of paths, at most "
                        + io.tenplex.jobs.reconfigure.ValueDigests.MAX_PATHS + " in all");
            }
            java.util.List<String> paths = new java.util.ArrayList<>();
            for (com.fasterxml.jackson.databind.JsonNode v : e.getValue()) {
                if (!v.isTextual()) {
                    throw new IllegalArgumentException("a value's path must be a string, not " + v);
                }
                paths.add(relative(v.textValue(), "a value's path"));
            }
            values.put(rank, paths);
        }
        var out = JSON.createObjectNode();
        jobs.own().digestValues(job, dir, values).forEach((rank, ds) -> {
            var r = out.putObject(String.valueOf(rank));
            ds.forEach(r::put);
        });
        return new Response(200, "application/json", JSON.writeValueAsBytes(JSON.createObjectNode().set("digests",
                out)));
    }

    /** A relative store path of plain names (no '.', '..' or empty component). */
    private static String relative(String path, String what) {
        if (path.length() > 4096) {
            throw new IllegalArgumentException(what + " is longer than 4096 characters");
        }
        for (String s : path.split("/", -1)) {
            String problem = io.tenplex.store.JobNamespace.nameProblem(s);
            if (problem != null) {
                throw new IllegalArgumentException(what + " must be a relative path of plain names: " + problem);
            }
        }
        return path;
    }

    private static int rank(String r) {
        if (r == null || !r.matches("0|[1-9][0-9]{0,4}") || Integer.parseInt(r) >= Limits.MAX_RANKS) {
            throw new IllegalArgumentException("ranks must be integers in [0, " + (Limits.MAX_RANKS - 1) + "]");
        }
        return Integer.parseInt(r);
    }

    private static int worker(String w) {
        if (w == null || !w.matches("[0-9]{1,7}") || Integer.parseInt(w) >= Limits.MAX_WORKER) {
            throw new IllegalArgumentException("worker must be given as ?worker=N, N in [0, " + (Limits.MAX_WORKER - 1)
                    + "]");
        }
        return Integer.parseInt(w);
    }
}
