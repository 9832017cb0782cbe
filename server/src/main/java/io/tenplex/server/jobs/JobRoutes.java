package io.tenplex.server.jobs;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.adapters.ResourceChange;
import io.tenplex.adapters.ResourceChanges;
import io.tenplex.jobs.Jobs;
import io.tenplex.jobs.StopFlags;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.jobs.common.PartStatus;
import io.tenplex.jobs.common.PlanPart;
import io.tenplex.jobs.reconfigure.PartRunner;
import io.tenplex.jobs.reconfigure.Reconfiguration;
import io.tenplex.server.ControlHandler;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.store.JobNamespace;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A daemon's job routes under {@code /api/v1/jobs/<job>/}: the scheduler-facing {@code reconfigure},
 * {@code resources}, {@code parallelize} and {@code stop}; saves, generations and what a rank loads
 * ({@code load/<rank>}); and the
 * daemon-to-daemon parts of a plan ({@code parts}, {@code parts/<id>/prepare|commit|abort}, protobuf
 * bodies). Each route parses its request and calls the {@link Jobs} facade; planning, sealing and
 * decoding parts run on the {@link PlanningPool}, never on the event loop.
 */
public final class JobRoutes implements ControlHandler {
    public static final String PREFIX = JobLayout.API_PREFIX;

    /** The answer of a started reconfiguration. */
    record Started(String plan, String status) {
    }

    /** The answer of a started resource change. */
    record ChangeListed(String id, String state, String status) {
    }

    record ChangeStarted(String id, String status) {
    }

    /** The answer of a seal (with the daemons that were not told, as an error). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record SealAnswer(long step, int rank, int world, int tensors, long bytes, boolean complete, String error) {
    }

    record Complete(boolean complete) {
    }

    record Parallelized(int tp, int pp, int dp, String parallelizer) {
    }

    private final Jobs jobs;
    private final ResourceChanges changes;
    private final PlanningPool planning;
    private final SharedRoutes shared;
    private final ObjectMapper json = new ObjectMapper();
    /** Route groups of other modules under {@code /api/v1/jobs/<job>/<segment>}, by segment. */
    private final java.util.Map<String, ControlHandler> groups = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile io.tenplex.jobs.JobRemoval removal;
    /** Why a resource change of a job may not be posted here (null: it may). */
    private volatile java.util.function.Function<String, String> changeGuard = job -> null;

    /** @param planning where planning, sealing and part decoding run (owned by the caller) */
    public JobRoutes(Jobs jobs, ResourceChanges changes, PlanningPool planning) {
        this(jobs, changes, planning, null);
    }

    /** @param shared saves and loads through shared memory; null when the daemon has none */
    public JobRoutes(Jobs jobs, ResourceChanges changes, PlanningPool planning, io.tenplex.jobs.shared.SharedSaves shared) {
        this.jobs = jobs;
        this.changes = changes;
        this.planning = planning;
        this.shared = new SharedRoutes(shared, this);
        addGroup(DowntimeRoutes.SEGMENT, new DowntimeRoutes(changes, jobs::requireKnown, planning));
        ChangeRoutes defined = new ChangeRoutes(jobs, planning); // every daemon plans its own part of a change
        addGroup(ChangeRoutes.CHANGES, defined);
        addGroup(ChangeRoutes.DESCRIPTIONS, defined);
        addGroup(ChangeRoutes.TREES, defined);
        addGroup(ChangeRoutes.DIGESTS, defined);
    }

    /** Serves {@code /api/v1/jobs/<job>/streams...} with {@code handler} (the streamed-sample routes). */
    public JobRoutes withStreams(ControlHandler handler) {
        addGroup("streams", handler);
        return this;
    }

    /** Serves {@code DELETE /api/v1/jobs/<job>} with {@code r} (without one, the route answers 404). */
    public JobRoutes withRemoval(io.tenplex.jobs.JobRemoval r) {
        this.removal = r;
        return this;
    }

    /** Refuses {@code POST .../resources} of a job for which {@code why} answers a reason (409, nothing raised). */
    public JobRoutes withChangeGuard(java.util.function.Function<String, String> why) {
        this.changeGuard = why;
        return this;
    }

    /** Hands the routes under {@code /api/v1/jobs/<job>/<segment>} to {@code handler}. */
    public void addGroup(String segment, ControlHandler handler) {
        groups.put(segment, handler);
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = segments(req.path());
            return route(JobNamespace.requireValidName(p[0]), p, req);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("bad control message: " + e.getMessage()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The segments of a job route's path after {@code /api/v1/jobs/}: the job's name first ({@code ""}
     * when the path has none, as {@code /api/v1/jobs/} or {@code /api/v1/jobs//stop}); a trailing
     * {@code /} adds none.
     */
    static String[] segments(String path) {
        String[] p = path.substring(PREFIX.length()).split("/");
        return p.length == 0 ? new String[] {""} : p;
    }

    private CompletableFuture<Response> route(String job, String[] p, Request req) throws IOException {
        String what = p.length > 1 ? p[1] : "";
        if (p.length == 1 && req.method().equals("DELETE") && removal != null) {
            return planning.submit(() -> done(remove(job, req)));
        }
        ControlHandler group = groups.get(what);
        if (group != null) {
            return group.handle(req);
        }
        if (what.equals("parts") && p.length >= 3) {
            return part(job, p);
        }
        if (what.equals("shared")) {
            return planning.submit(() -> shared.handle(job, p, req));
        }
        CompletableFuture<Response> r = schedulerRoute(job, what + "/" + p.length, p, req);
        if (r == null) {
            r = saveRoute(job, what + "/" + p.length, p, req);
        }
        if (r == null) {
            throw StoreException.notFound("no job route " + req.method() + " " + req.path());
        }
        return r;
    }

    /** The scheduler's routes, or null when {@code key} (route/segments) names none of them. */
    private CompletableFuture<Response> schedulerRoute(String job, String key, String[] p, Request req)
            throws IOException {
        boolean post = req.method().equals("POST");
        return switch (key) {
            case "reconfigure/2" -> post ? planning.submit(() -> done(reconfigure(job, req))) : null;
            case "stop/2" -> done(stop(job, req));
            case "tiers/2" -> done(tiers(job, req));
            case "resources/2" -> post ? done(startChange(job, req))
                    : req.method().equals("GET") ? done(listChanges(job)) : null;
            case "parallelize/2" -> post ? planning.submit(() -> done(parallelize(job, req))) : null;
            case "resources/3" -> change(job, p[2], req);
            case "reconfigurations/3" -> req.method().equals("GET") ? reconfiguration(job, p[2], req) : null;
            default -> null;
        };
    }

    /** The routes of saves, generations and plan parts, or null when {@code key} names none of them. */
    private CompletableFuture<Response> saveRoute(String job, String key, String[] p, Request req) {
        boolean post = req.method().equals("POST");
        if (key.equals("saves/5") && post && p[3].equals("ranks")) {
            long step = JobRequests.step(p[2]);
            int rank = JobRequests.rank(p[4]);
            return planning.submit(() -> seal(job, step, rank, req));
        }
        if (key.equals("saves/4") && post && p[3].equals("sealed")) {
            long step = JobRequests.step(p[2]);
            return planning.submit(() -> done(sealed(job, step, req)));
        }
        if (key.equals("generations/2") && req.method().equals("GET")) {
            jobs.requireKnown(job);
            return done(json(200, jobs.generations().describe(job)));
        }
        if (key.equals("load/3") && req.method().equals("GET")) {
            return done(json(200, jobs.loadChoice(job, JobRequests.rank(p[2]))));
        }
        if (key.equals("parts/2") && post) {
            return planning.submit(() -> done(startPart(job, req)));
        }
        return null;
    }

    private static CompletableFuture<Response> done(Response r) {
        return CompletableFuture.completedFuture(r);
    }

    /**
     * {@code DELETE /api/v1/jobs/<job>}: removes the job on every daemon of the cluster;
     * {@code ?local=true}: only here ({@code &dryRun=true}: only whether it could, 409 while a change runs;
     * {@code &prepare=true}: that, then hold back the job's saves until the removal, and wait for those in
     * flight; {@code &release=true}: let them go on).
     */
    private Response remove(String job, Request req) {
        try {
            if (!"true".equals(req.param("local"))) {
                return json(200, removal.removeEverywhere(job, java.util.Map.of()));
            }
            if ("true".equals(req.param("dryRun")) || "true".equals(req.param("prepare"))) {
                if ("true".equals(req.param("prepare"))) {
                    removal.prepare(job);
                } else {
                    removal.check(job);
                }
                return json(200, java.util.Map.of("job", job, "removable", true));
            }
            if ("true".equals(req.param("release"))) {
                removal.release(job);
                return json(200, java.util.Map.of("job", job, "released", true));
            }
            return json(200, removal.removeHere(job));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while removing job " + job, e);
        }
    }

    /** {@code POST .../reconfigure} ({@code ?dryRun=true}: only the plan's summary). */
    private Response reconfigure(String job, Request req) throws IOException {
        var request = JobRequests.reconfigure(job, req);
        if ("true".equals(req.param("dryRun"))) {
            return json(200, jobs.dryRun(request));
        }
        Reconfiguration r = jobs.reconfigure(request);
        return json(202, new Started(r.id(), new JobLayout(job).apiReconfiguration(r.id())));
    }

    /** {@code GET .../reconfigurations/<id>} ({@code ?wait=true}: once it has ended). */
    private CompletableFuture<Response> reconfiguration(String job, String id, Request req) {
        Reconfiguration r = jobs.reconfiguration(job, id);
        CompletableFuture<Void> ready = "true".equals(req.param("wait"))
                ? r.finished().completeOnTimeout(null, 10, TimeUnit.MINUTES) : r.refresh();
        return ready.thenApply(v -> json(200, r.describe()));
    }

    /**
     * {@code GET|POST|DELETE .../stop}: read (with {@code ?step=}, the steps a rank has finished),
     * raise (JSON {@code atStep}, {@code reason}; both optional) or clear the stop flag.
     */
    private Response stop(String job, Request req) throws IOException {
        StopFlags flags = jobs.stopFlags();
        switch (req.method()) {
            case "GET":
                jobs.requireKnown(job); // a rank asking about a misspelt job would otherwise run on forever
                return json(200, flags.ask(job, StopFlags.step(req.param("step"))));
            case "POST": {
                JsonNode b = JobRequests.object(req);
                OptionalLong at = b.has("atStep") ? StopFlags.step(b.get("atStep").asText()) : OptionalLong.empty();
                flags.raise(job, at, b.path("reason").asText("raised by request"));
                return json(200, flags.describe(job, OptionalLong.empty()));
            }
            case "DELETE":
                flags.clear(job);
                return json(200, flags.describe(job, OptionalLong.empty()));
            default:
                return Response.text(405, req.method() + " not allowed on the stop flag (GET, POST, DELETE)");
        }
    }

    /** {@code GET|PUT .../tiers}: the job's checkpoint levels (PUT: JSON fields to change). */
    private Response tiers(String job, Request req) throws IOException {
        io.tenplex.jobs.generations.Tiers t = jobs.generations().tiers();
        if (req.method().equals("PUT")) {
            t.set(job, t.settings(job).with(JobRequests.object(req)));
        } else if (!req.method().equals("GET")) {
            return Response.text(405, req.method() + " not allowed on a job's tiers (GET, PUT)");
        }
        return json(200, t.settings(job));
    }

    /** {@code POST .../resources}: starts a resource change; 202 with its id and status URL (409 while one runs). */
    private Response startChange(String job, Request req) throws IOException {
        jobs.requireKnown(job); // a change for a misspelt job would raise a flag no rank ever reads
        String refused = changeGuard.apply(job);
        if (refused != null) {
            throw StoreException.conflict(refused);
        }
        ResourceChange c = changes.start(job, JobRequests.object(req));
        return json(202, new ChangeStarted(c.id(), new JobLayout(job).apiResourceChange(c.id())));
    }

    /** {@code GET .../resources}: the job's changes kept now (running and recently finished), oldest first. */
    private Response listChanges(String job) {
        jobs.requireKnown(job);
        List<ChangeListed> out = new java.util.ArrayList<>();
        for (ResourceChange c : changes.of(job)) {
            out.add(new ChangeListed(c.id(), c.describe().state(), new JobLayout(job).apiResourceChange(c.id())));
        }
        return json(200, java.util.Map.of("changes", out));
    }

    /** {@code GET|DELETE .../resources/<id>}: a change's status ({@code ?wait=true}: once ended), or cancels it. */
    private CompletableFuture<Response> change(String job, String id, Request req) {
        if (req.method().equals("DELETE")) {
            return changes.cancel(job, id).thenApply(d -> json(200, d));
        }
        ResourceChange c = changes.get(job, id);
        if (!req.method().equals("GET")) {
            return done(Response.text(405, req.method() + " not allowed on a resource change (GET, DELETE)"));
        }
        CompletableFuture<Void> ready = "true".equals(req.param("wait"))
                ? c.finished().copy().completeOnTimeout(null, 10, TimeUnit.MINUTES)
                : CompletableFuture.completedFuture(null);
        return ready.thenApply(v -> json(200, c.describe()));
    }

    /** {@code POST .../parallelize}: the configuration a resource change with this body would choose. */
    private Response parallelize(String job, Request req) throws IOException {
        ResourceChanges.Choice c = changes.parallelize(job, JobRequests.object(req));
        return json(200, new Parallelized(c.config().tp(), c.config().pp(), c.config().dp(), c.by()));
    }

    /** {@code POST .../saves/<step>/ranks/<rank>}: seals the rank here, then tells every daemon. */
    private CompletableFuture<Response> seal(String job, long step, int rank, Request req) throws IOException {
        JsonNode b = JobRequests.object(req);
        int world = JobRequests.world(b);
        return jobs.seal(job, step, rank, world, b.get("config"), io.tenplex.jobs.common.ConfigJson.daemons(b.get("daemons")),
                JobRequests.entries(b)).thenApply(s -> sealReply(s, rank));
    }

    /** A seal's answer: 200, or 502 naming the daemons that were not told. */
    Response sealReply(io.tenplex.jobs.generations.Sealed s, int rank) {
        return s.notTold().isEmpty()
                ? json(200, new SealAnswer(s.step(), s.rank(), s.world(), s.tensors(), s.bytes(), s.complete(), null))
                : json(502, new SealAnswer(s.step(), s.rank(), s.world(), s.tensors(), s.bytes(), s.complete(),
                        "rank " + rank + " is sealed here, but these daemons were not told (seal again to "
                                + "retry): " + String.join("; ", s.notTold())));
    }

    /** {@code POST .../saves/<step>/sealed}: ranks of a step were sealed on another daemon. */
    private Response sealed(String job, long step, Request req) throws IOException {
        JsonNode b = JobRequests.object(req);
        var ranks = JobRequests.ranks(b);
        return json(200, new Complete(jobs.sealed(job, step, ranks, JobRequests.world(b), b.get("config"))));
    }

    /** {@code POST .../parts}: decodes and checks a part of a plan, then starts it (idempotent per plan). */
    private Response startPart(String job, Request req) throws IOException {
        PlanPart part = PlanCodec.decode(WorkerPlan.parseFrom(req.body()));
        if (!part.job().equals(job)) {
            throw new IllegalArgumentException("part of job " + part.job() + " posted to job " + job);
        }
        return proto(202, jobs.startPart(part).status());
    }

    /** {@code GET .../parts/<id>} and {@code POST .../parts/<id>/prepare|commit|abort}. */
    private CompletableFuture<Response> part(String job, String[] p) {
        String action = p.length == 4 ? p[3] : "";
        if (action.equals("abort")) { // also of a part not started here yet: a late start is refused then
            return jobs.abortPart(job, p[2]).thenApply(s -> proto(200, s));
        }
        PartRunner part = jobs.part(job, p[2]);
        return switch (action) {
            case "" -> done(proto(200, part.status()));
            case "prepare" -> part.prepared().thenApply(s -> proto(200, s));
            case "commit" -> done(proto(200, part.commit()));
            default -> throw StoreException.notFound("no action '" + action + "' on a plan part");
        };
    }

    private static Response proto(int status, PartStatus s) {
        return new Response(status, HttpDaemonClient.PROTOBUF, PlanCodec.encode(s).toByteArray());
    }

    Response json(int status, Object o) {
        try {
            return new Response(status, "application/json", json.writeValueAsString(o).getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
