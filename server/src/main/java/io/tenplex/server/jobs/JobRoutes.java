package io.tenplex.adapters;

import io.tenplex.jobs.ConfigJson;
import io.tenplex.jobs.FlowRates;
import io.tenplex.jobs.Generations;
import io.tenplex.jobs.JobPaths;
import io.tenplex.jobs.Limits;
import io.tenplex.jobs.PartRunner;
import io.tenplex.jobs.PlanningPool;
import io.tenplex.jobs.Reconfiguration;
import io.tenplex.jobs.SmallFiles;
import io.tenplex.jobs.StopFlags;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Model;
import io.tenplex.ptc.ModelSpecJson;
import io.tenplex.ptc.ParallelConfig;
import io.tenplex.ptc.Ptc;
import io.tenplex.ptc.RankLayout;
import io.tenplex.ptc.StageMap;
import io.tenplex.store.StoreException;
import io.tenplex.store.StorePath;
import io.tenplex.store.TensorStore;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.server.peer.PeerClient;
import io.tenplex.server.ControlHandler;
import io.tenplex.transform.Plan;
import io.tenplex.transform.Planner;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A daemon's job routes under {@code /api/v1/jobs/<job>/}: the scheduler-facing
 * {@code reconfigure} (this daemon coordinates) and the daemon-to-daemon parts of a plan
 * ({@code parts}, {@code parts/<id>/prepare|commit|abort}, protobuf bodies).
 */
public final class JobService implements ControlHandler, AutoCloseable {
    public static final String PREFIX = io.tenplex.jobs.JobPaths.API_PREFIX;

    private final TensorStore store;
    private final PeerClient peers;
    private final ExecutorService readers = Executors.newFixedThreadPool(64, named("tenplex-fetch")); // 2 reads per source worker (PartRunner)
    private final ExecutorService background = Executors.newCachedThreadPool(named("tenplex-job"));
    private final PlanningPool planning = new PlanningPool(); // planning and sealing: never on the event loop
    private final java.util.concurrent.ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            named("tenplex-indoubt"));
    /** Finished parts are forgotten after this long, and beyond {@link #MAX_FINISHED_PARTS} the oldest first. */
    static final Duration PART_RETENTION = Duration.ofMinutes(30);
    private volatile Duration partRetention = PART_RETENTION;
    static final int MAX_FINISHED_PARTS = 1024;
    /** How long a prepared part waits for commit or abort before it resolves itself, unless a request says. */
    public static final Duration DEFAULT_PREPARED_TIMEOUT = Duration.ofSeconds(60);
    private volatile Duration preparedTimeout = DEFAULT_PREPARED_TIMEOUT;
    private volatile String selfAddress = "";
    private final HttpClient http;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, PartRunner> parts = new ConcurrentHashMap<>();
    private final Map<String, Reconfiguration> reconfigurations = new ConcurrentHashMap<>();
    private final Map<String, ResourceChange> changes = new ConcurrentHashMap<>();
    private final StopFlags flags;
    private final Generations generations;
    private final AtomicInteger ids = new AtomicInteger();
    private final Duration timeout;

    private final String token;
    private volatile Map<Integer, InetSocketAddress> defaultDaemons = Map.of();
    private volatile long linkRate;

    /**
     * Every worker's link rate in bits/s ({@code --link-rate}), used when a reconfiguration names
     * none: flows are then paced so that all finish with the busiest link ({@link FlowRates}); 0
     * leaves them to TCP.
     */
    public void setLinkRate(long bitsPerSecond) {
        this.linkRate = bitsPerSecond;
    }

    /**
     * The address (host:port) other daemons reach this one at: parts of the reconfigurations it
     * coordinates ask it for the outcome when in doubt.
     */
    public void setSelfAddress(InetSocketAddress address) {
        String host = address.getAddress() != null && address.getAddress().isAnyLocalAddress() ? localHost()
                : address.getHostString();
        this.selfAddress = host + ":" + address.getPort();
    }

    private static String localHost() {
        try {
            return java.net.InetAddress.getLocalHost().getHostAddress();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }

    /** How long finished parts and reconfigurations are kept (for tests; default {@link #PART_RETENTION}). */
    void setPartRetention(Duration retention) {
        this.partRetention = retention;
    }

    /** How long a prepared part waits for the coordinator's commit or abort before it asks the others. */
    public void setPreparedTimeout(Duration timeout) {
        this.preparedTimeout = timeout;
    }

    /** Parses a link rate such as {@code 100mbit} or {@code 10gbit} into bits/s. */
    public static long parseLinkRate(String text) {
        return FlowRates.parse(text);
    }

    /** The daemons of the cluster (worker to address) used when a request names none ({@code --peers}). */
    public void setDefaultDaemons(Map<Integer, InetSocketAddress> daemons) {
        this.defaultDaemons = Map.copyOf(daemons);
    }

    public JobService(TensorStore store, PeerClient peers, Duration timeout) {
        this(store, peers, timeout, null);
    }

    /** @param token the bearer token of the other daemons (the same for the whole cluster), or null */
    public JobService(TensorStore store, PeerClient peers, Duration timeout, String token) {
        this(store, peers, timeout, token, new StopFlags());
    }

    /** @param flags the daemon's stop flags (shared with the prototype's {@code GET /stop} route) */
    public JobService(TensorStore store, PeerClient peers, Duration timeout, String token, StopFlags flags) {
        this.flags = flags;
        this.store = store;
        this.peers = peers;
        this.timeout = timeout;
        this.token = token;
        this.http = peers.link().http();
        this.generations = new Generations(store);
    }

    private static java.util.concurrent.ThreadFactory named(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = req.path().substring(PREFIX.length()).split("/");
            String job = p[0];
            new JobPaths(job);
            String what = p.length > 1 ? p[1] : "";
            boolean post = req.method().equals("POST");
            if (what.equals("reconfigure") && p.length == 2 && post) {
                return planning.submit(() -> CompletableFuture.completedFuture(reconfigure(job, req)));
            }
            if (what.equals("stop") && p.length == 2) {
                return CompletableFuture.completedFuture(stop(job, req));
            }
            if (what.equals("resources") && p.length == 2 && post) {
                return CompletableFuture.completedFuture(resources(job, req));
            }
            if (what.equals("parallelize") && p.length == 2 && post) {
                return planning.submit(() -> CompletableFuture.completedFuture(parallelize(job, req)));
            }
            if (what.equals("resources") && p.length == 3) {
                ResourceChange c = changes.get(job + "/" + p[2]);
                if (c == null) {
                    throw StoreException.notFound("no resource change " + p[2] + " of job " + job);
                }
                if (req.method().equals("DELETE")) {
                    if (!c.cancel() && c.running()) {
                        throw StoreException.conflict("resource change " + p[2] + " is already reconfiguring");
                    }
                    return c.finished().thenApply(v -> jsonResponse(200, c.describe()));
                }
                if (!req.method().equals("GET")) {
                    return CompletableFuture.completedFuture(Response.text(405, req.method()
                            + " not allowed on a resource change (GET, DELETE)"));
                }
                CompletableFuture<Void> ready = "true".equals(req.param("wait"))
                        ? c.finished().copy().completeOnTimeout(null, 10, TimeUnit.MINUTES)
                        : CompletableFuture.completedFuture(null);
                return ready.thenApply(v -> jsonResponse(200, c.describe()));
            }
            if (what.equals("reconfigurations") && p.length == 3 && req.method().equals("GET")) {
                Reconfiguration r = reconfigurations.get(job + "/" + p[2]);
                if (r == null) {
                    throw StoreException.notFound("no reconfiguration " + p[2] + " of job " + job);
                }
                CompletableFuture<Void> ready = "true".equals(req.param("wait"))
                        ? r.finished().completeOnTimeout(null, 10, TimeUnit.MINUTES) : r.refresh();
                return ready.thenApply(v -> jsonResponse(200, r.describe()));
            }
            if (what.equals("saves") && p.length == 5 && p[3].equals("ranks") && post) {
                long step = step(p[2]);
                int rank = rank(p[4]);
                return planning.submit(() -> seal(job, step, rank, req));
            }
            if (what.equals("saves") && p.length == 4 && p[3].equals("sealed") && post) {
                long step = step(p[2]);
                return planning.submit(() -> CompletableFuture.completedFuture(sealed(job, step, req)));
            }
            if (what.equals("generations") && p.length == 2 && req.method().equals("GET")) {
                return CompletableFuture.completedFuture(jsonResponse(200, generations.describe(job)));
            }
            if (what.equals("parts") && p.length == 2 && post) {
                return planning.submit(() -> CompletableFuture.completedFuture(startPart(job, req)));
            }
            if (what.equals("parts") && p.length >= 3) {
                prune();
                PartRunner part = parts.get(job + "/" + p[2]);
                if (part == null) {
                    throw StoreException.notFound("no part of plan " + p[2] + " of job " + job + " on this daemon");
                }
                String action = p.length == 4 ? p[3] : "";
                return switch (action) {
                    case "" -> CompletableFuture.completedFuture(proto(200, part.status().toByteArray()));
                    case "prepare" -> part.prepared().thenApply(s -> proto(200, s.toByteArray()));
                    case "commit" -> CompletableFuture.completedFuture(proto(200, part.commit().toByteArray()));
                    case "abort" -> CompletableFuture.completedFuture(proto(200, part.abort().toByteArray()));
                    default -> throw StoreException.notFound("no action '" + action + "' on a plan part");
                };
            }
            throw StoreException.notFound("no job route " + req.method() + " " + req.path());
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("bad control message: " + e.getMessage()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** {@code POST .../parts}: decodes and checks a part of a plan, then starts it (idempotent per plan). */
    private Response startPart(String job, Request req) throws IOException {
        WorkerPlan wp = WorkerPlan.parseFrom(req.body());
        if (!wp.getJob().equals(job)) {
            throw new IllegalArgumentException("part of job " + wp.getJob() + " posted to job " + job);
        }
        prune();
        PartRunner part = parts.computeIfAbsent(job + "/" + wp.getPlanId(),
                k -> new PartRunner(wp, store, peers, readers, background, http, token, timer, preparedTimeout));
        return proto(202, part.status().toByteArray());
    }

    /** The coordinator's address for parts in doubt: {@code coordinator} (host:port) in the body, else this daemon's. */
    private String coordinator(JsonNode body) {
        if (!body.hasNonNull("coordinator")) {
            return selfAddress;
        }
        String a = body.get("coordinator").asText();
        PartRunner.address(a); // checks host:port
        return a;
    }

    /** Forgets finished parts older than the retention, and the oldest beyond the bound. */
    private void prune() {
        long now = System.nanoTime();
        parts.values().removeIf(p -> p.finishedBefore(now, partRetention.toNanos()));
        List<Map.Entry<String, PartRunner>> finished = new ArrayList<>(parts.entrySet().stream()
                .filter(e -> e.getValue().finishedAt() != 0).toList());
        if (finished.size() > MAX_FINISHED_PARTS) {
            finished.sort(java.util.Comparator.comparingLong(e -> e.getValue().finishedAt()));
            finished.subList(0, finished.size() - MAX_FINISHED_PARTS).forEach(e -> parts.remove(e.getKey(), e.getValue()));
        }
        reconfigurations.values().removeIf(r -> r.finishedBefore(now, partRetention.toNanos()));
    }

    /** {@code POST .../saves/<step>/sealed}: ranks of a step were sealed on another daemon. */
    private Response sealed(String job, long step, Request req) throws IOException {
        JsonNode b = jsonBody(req);
        List<Integer> ranks = new ArrayList<>();
        if (b.path("ranks").size() > Limits.MAX_RANKS) {
            throw new IllegalArgumentException("\"ranks\" lists " + b.path("ranks").size() + " ranks, over the limit of "
                    + Limits.MAX_RANKS);
        }
        for (JsonNode r : b.path("ranks")) {
            if (!r.isIntegralNumber() || !r.canConvertToInt()) {
                throw new IllegalArgumentException("rank " + Limits.abbreviate(r) + " is not an integer");
            }
            ranks.add(r.intValue());
        }
        boolean complete = generations.sealed(job, step, ranks, world(b), b.get("config"));
        return jsonResponse(200, Map.of("complete", complete));
    }

    private static long step(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("step '" + s + "' is not a number");
        }
    }

    private static int rank(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rank '" + s + "' is not a number");
        }
    }

    private static int world(JsonNode b) {
        if (!b.has("world")) {
            throw new IllegalArgumentException("\"world\" (the number of ranks that save) is required");
        }
        return Limits.intIn(b, "world", 0, 1, Limits.MAX_RANKS, "");
    }

    private JsonNode jsonBody(Request req) throws IOException {
        JsonNode b = req.body().length == 0 ? json.createObjectNode() : json.readTree(req.body());
        if (b == null || !b.isObject()) {
            throw new IllegalArgumentException("expected a JSON object body");
        }
        return b;
    }

    /**
     * {@code POST /api/v1/jobs/<job>/saves/<step>/ranks/<rank>} with {@code world}, optional
     * {@code config} and {@code daemons}: seals the rank here, then tells every daemon of the cluster.
     */
    private CompletableFuture<Response> seal(String job, long step, int rank, Request req) throws IOException {
        JsonNode b = jsonBody(req);
        int world = world(b);
        JsonNode config = b.get("config");
        Map<String, Object> manifest = generations.seal(job, step, rank, world, config);
        boolean complete = generations.sealed(job, step, List.of(rank), world, config);
        Map<Integer, InetSocketAddress> daemons = daemons(b);
        Map<String, Object> sealedBody = new LinkedHashMap<>();
        sealedBody.put("ranks", List.of(rank));
        sealedBody.put("world", world);
        if (config != null) {
            sealedBody.put("config", config);
        }
        return tellAll(daemons, job + "/saves/" + step + "/sealed", "POST", sealedBody).thenApply(failed -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("step", step);
            m.put("rank", rank);
            m.put("world", world);
            m.put("tensors", ((Map<?, ?>) manifest.get("tensors")).size());
            m.put("bytes", manifest.get("bytes"));
            m.put("complete", complete || generations.current(job).orElse(-1) == step);
            if (!failed.isEmpty()) {
                m.put("error", "rank " + rank + " is sealed here, but these daemons were not told (seal again to "
                        + "retry): " + String.join("; ", failed));
                return jsonResponse(502, m);
            }
            return jsonResponse(200, m);
        });
    }

    private Map<Integer, InetSocketAddress> daemons(JsonNode body) {
        Map<Integer, InetSocketAddress> daemons = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = body.path("daemons").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            daemons.put(Integer.parseInt(e.getKey()), PartRunner.address(e.getValue().asText()));
        }
        if (daemons.isEmpty()) {
            daemons.putAll(defaultDaemons);
        }
        return daemons;
    }

    private static Response proto(int status, byte[] body) {
        return new Response(status, Reconfiguration.PROTOBUF, body);
    }

    private Response jsonResponse(int status, Object o) {
        return new Response(status, "application/json", Reconfiguration.json(json, o).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * {@code POST /api/v1/jobs/<job>/reconfigure} with JSON: {@code model} (a model spec; omitted: the
     * one stored with the job), {@code from} and {@code to} (each {@code tp, pp, dp}, optional
     * {@code ep}, and either {@code devicesPerWorker} with {@code firstWorker} or {@code devices} as
     * [worker, local] pairs), {@code daemons} (worker to host:port) and {@code step}. With
     * {@code ?dryRun=true} only the plan's summary comes back.
     */
    private Response reconfigure(String job, Request req) throws IOException {
        JsonNode body = json.readTree(req.body());
        if (body == null || !body.isObject()) {
            throw new IllegalArgumentException("reconfigure needs a JSON object body");
        }
        boolean dryRun = "true".equals(req.param("dryRun"));
        Object started = startReconfiguration(job, body, dryRun);
        if (dryRun) {
            return jsonResponse(200, started);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("plan", ((Reconfiguration) started).id());
        m.put("status", PREFIX + job + "/reconfigurations/" + ((Reconfiguration) started).id());
        return jsonResponse(202, m);
    }

    /** Plans and starts a reconfiguration (the reconfigure route's body); a dry run answers the plan's summary. */
    private Object startReconfiguration(String job, JsonNode body, boolean dryRun) throws IOException {
        Model model = model(job, body);
        String sourceDir = "save";
        long step = body.path("step").asLong(0);
        JsonNode fromConfig = body.path("from");
        java.util.OptionalLong generation = body.has("generation") ? java.util.OptionalLong.of(body.get("generation")
                .asLong()) : body.path("source").asText("").equals("save") ? java.util.OptionalLong.empty()
                        : generations.current(job);
        if (generation.isPresent()) {
            long g = generation.getAsLong();
            JsonNode recorded = generations.config(job, g);
            sourceDir = Generations.sourceDir(g);
            if (!body.has("step")) {
                step = g;
            }
            if (fromConfig.isMissingNode()) {
                if (recorded == null) {
                    throw new IllegalArgumentException("generation " + g + " of job " + job
                            + " was saved without a configuration; give \"from\"");
                }
                fromConfig = recorded;
            }
        }
        Ptc from = ConfigJson.ptc(model, fromConfig, "from");
        Ptc to = ConfigJson.ptc(model, body.path("to"), "to");
        Plan plan = Planner.plan(from, to);
        if (dryRun) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("from", plan.from().toString());
            m.put("to", plan.to().toString());
            m.put("source", "/job/" + job + "/" + sourceDir);
            m.put("shards", plan.shards().size());
            m.put("report", plan.report().toString());
            m.put("plan", plan.toString().lines().limit(40).toList());
            return m;
        }
        Map<Integer, InetSocketAddress> daemons = daemons(body);
        if (daemons.isEmpty()) {
            throw new IllegalArgumentException("no daemon addresses: give \"daemons\" in the request or start tenplexd "
                    + "with --peers");
        }
        String id = "p" + ids.incrementAndGet() + "-" + Long.toHexString(System.nanoTime() & 0xffffff);
        int central = body.path("central").asBoolean(false) ? body.path("centralWorker").asInt(0) : -1;
        if (central >= 0 && !daemons.containsKey(central)) {
            throw new IllegalArgumentException("central worker " + central + " has no daemon address");
        }
        long rate = body.hasNonNull("linkRate") ? FlowRates.parse(body.get("linkRate").asText()) : linkRate;
        long prepared = Limits.intIn(body, "preparedTimeoutMillis", (int) Math.min(Integer.MAX_VALUE,
                preparedTimeout.toMillis()), 100, Limits.MAX_PREPARED_TIMEOUT_MILLIS, "");
        Reconfiguration r = new Reconfiguration(job, id, plan, from, daemons, step, peers.link(), timeout, token,
                central, sourceDir, rate, new Reconfiguration.InDoubtInfo(coordinator(body), prepared));
        reconfigurations.put(job + "/" + id, r);
        r.start(background);
        return r;
    }

    /**
     * {@code GET|POST|DELETE /api/v1/jobs/<job>/stop}: read (with {@code ?step=}, the steps a rank has
     * finished), raise (JSON {@code atStep}, {@code reason}; both optional) or clear the stop flag.
     */
    private Response stop(String job, Request req) throws IOException {
        switch (req.method()) {
            case "GET":
                return jsonResponse(200, flags.describe(job, StopFlags.step(req.param("step"))));
            case "POST": {
                JsonNode b = jsonBody(req);
                java.util.OptionalLong at = b.has("atStep") ? StopFlags.step(b.get("atStep").asText())
                        : java.util.OptionalLong.empty();
                flags.raise(job, at, b.path("reason").asText("raised by request"));
                return jsonResponse(200, flags.describe(job, java.util.OptionalLong.empty()));
            }
            case "DELETE":
                flags.clear(job);
                return jsonResponse(200, flags.describe(job, java.util.OptionalLong.empty()));
            default:
                return Response.text(405, req.method() + " not allowed on the stop flag (GET, POST, DELETE)");
        }
    }

    /**
     * {@code POST /api/v1/jobs/<job>/resources}: the job's devices change. Checks the request, then
     * runs the {@link ResourceChange} lifecycle in the background; answers 202 with its id and status
     * URL. One change per job at a time (409 while one runs).
     */
    private Response resources(String job, Request req) throws IOException {
        ResourceChange.Spec spec = changeSpec(job, req);
        synchronized (changes) {
            for (Map.Entry<String, ResourceChange> e : changes.entrySet()) {
                if (e.getKey().startsWith(job + "/") && e.getValue().running()) {
                    throw StoreException.conflict("resource change " + e.getValue().id() + " of job " + job
                            + " is still running");
                }
            }
            String id = "r" + ids.incrementAndGet() + "-" + Long.toHexString(System.nanoTime() & 0xffffff);
            ResourceChange c = new ResourceChange(job, id, spec, flags, generations, () -> storedModel(job), body -> {
                try {
                    return (Reconfiguration) startReconfiguration(job, body, false);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, (atStep, reason) -> setRemoteFlags(job, spec.daemons(), atStep, reason));
            changes.put(job + "/" + id, c);
            c.begin();
            background.execute(c::run);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", id);
            m.put("status", PREFIX + job + "/resources/" + id);
            return jsonResponse(202, m);
        }
    }

    /** A resource change's request, with the para-config table stored with the job as its default parallelizer. */
    private ResourceChange.Spec changeSpec(String job, Request req) throws IOException {
        Parallelizer stored = SmallFiles.read(store, StorePath.parse("/job/" + job + "/para-config.json"))
                .map(ParaConfigTable::parse).orElse(null);
        return ResourceChange.Spec.parse(jsonBody(req), stored);
    }

    /**
     * {@code POST /api/v1/jobs/<job>/parallelize}: the configuration a resource change with this body
     * would choose (the parallelizer's answer, nothing else happens). For launching a job's first
     * ranks, whose devices no resource change has given yet.
     */
    private Response parallelize(String job, Request req) throws IOException {
        ResourceChange.Spec spec = changeSpec(job, req);
        ParallelConfig c = spec.config();
        String by = "request";
        if (c == null) {
            Model model = spec.parallelizer() instanceof ParaConfigTable ? null : storedModel(job);
            c = spec.parallelizer().choose(new Parallelizer.Request(spec.devices().size(), spec.devicesPerWorker(), model,
                    spec.memoryPerDevice()));
            by = spec.parallelizer().name();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tp", c.tp());
        m.put("pp", c.pp());
        m.put("dp", c.dp());
        m.put("parallelizer", by);
        return jsonResponse(200, m);
    }

    /** Raises ({@code reason} given) or clears the job's stop flag on the daemons of a change; answers the failures. */
    private CompletableFuture<List<String>> setRemoteFlags(String job, JsonNode named, java.util.OptionalLong atStep,
            String reason) {
        com.fasterxml.jackson.databind.node.ObjectNode holder = json.createObjectNode();
        if (named != null) {
            holder.set("daemons", named);
        }
        Map<String, Object> body = null;
        if (reason != null) {
            body = new LinkedHashMap<>();
            if (atStep.isPresent()) {
                body.put("atStep", atStep.getAsLong());
            }
            body.put("reason", reason);
        }
        return tellAll(new java.util.TreeMap<>(daemons(holder)), job + "/stop", reason != null ? "POST" : "DELETE", body);
    }

    /**
     * Sends {@code method PREFIX + route} (with {@code body} as JSON, or none) to every daemon at
     * once; answers the ones that failed, as "worker W at host:port: reason".
     */
    private CompletableFuture<List<String>> tellAll(Map<Integer, InetSocketAddress> daemons, String route, String method,
            Object body) {
        java.net.http.HttpRequest.BodyPublisher publisher = body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
                : java.net.http.HttpRequest.BodyPublishers.ofString(Reconfiguration.json(json, body));
        List<CompletableFuture<String>> sent = new ArrayList<>();
        daemons.forEach((w, a) -> {
            java.net.http.HttpRequest.Builder r = java.net.http.HttpRequest.newBuilder(peers.link().uri(a, PREFIX + route))
                    .timeout(Duration.ofSeconds(30))
                    .method(method, publisher);
            if (body != null) {
                r.header("Content-Type", "application/json");
            }
            if (token != null) {
                r.header("Authorization", "Bearer " + token);
            }
            sent.add(http.sendAsync(r.build(), java.net.http.HttpResponse.BodyHandlers.ofString()).handle((resp, t) ->
                    t != null ? "worker " + w + " at " + a + ": " + (t.getMessage() != null ? t.getMessage() : t)
                            : resp.statusCode() == 200 ? null
                                    : "worker " + w + " at " + a + ": " + resp.statusCode() + " " + resp.body().strip()));
        });
        return CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).thenApply(v ->
                sent.stream().map(CompletableFuture::join).filter(x -> x != null).toList());
    }

    /** The daemon's stop flags. */
    public StopFlags stopFlags() {
        return flags;
    }

    private Model model(String job, JsonNode body) throws IOException {
        if (body.has("model")) {
            String spec = json.writeValueAsString(body.get("model"));
            Model m = ModelSpecJson.parse(spec);
            SmallFiles.put(store, StorePath.parse("/job/" + job + "/model.json"), spec); // kept for later reconfigurations
            return m;
        }
        return storedModel(job);
    }

    /** The model spec stored with the job at {@code /job/<job>/model.json}. */
    private Model storedModel(String job) {
        return ModelSpecJson.parse(SmallFiles.read(store, StorePath.parse("/job/" + job + "/model.json")).orElseThrow(
                () -> new IllegalArgumentException("no model in the request and none stored with job " + job)));
    }

    @Override
    public void close() {
        planning.close();
        timer.shutdownNow();
        readers.shutdownNow();
        background.shutdownNow();
    }
}
