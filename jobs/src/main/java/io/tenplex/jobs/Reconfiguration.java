package io.tenplex.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.ptc.Device;
import io.tenplex.ptc.Ptc;
import io.tenplex.server.control.PartStatus;
import io.tenplex.server.control.WorkerPlan;
import io.tenplex.transform.Plan;
import io.tenplex.transform.PlanReport;
import java.io.IOException;
import java.net.InetSocketAddress;
import io.tenplex.server.peer.DaemonLink;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * The coordinator of one reconfiguration: checks that every daemon answers, sends each destination
 * worker its part of the plan (protobuf), asks all to prepare, then commits everywhere, or aborts
 * everywhere when any part failed or did not answer in time.
 */
public final class Reconfiguration {
    public enum State { PLANNED, EXECUTING, COMMITTING, COMMITTED, ABORTED }

    public static final String PROTOBUF = "application/x-protobuf";

    /**
     * What parts need to resolve themselves when in doubt: the coordinator's address (host:port, may
     * be empty) and how long a prepared part waits.
     */
    public record InDoubtInfo(String coordinator, long preparedTimeoutMillis) {
    }

    private final String job;
    private final String id;
    private final Plan plan;
    private final Ptc from;
    private final Map<Integer, InetSocketAddress> daemons;
    private final long step;
    private final HttpClient http;
    private final DaemonLink link;
    private final Duration timeout;
    private final String token;
    private final int central;
    private final String sourceDir;
    private final long linkRate;
    private final InDoubtInfo inDoubt;
    private volatile long finishedAt;
    private final CompletableFuture<Void> finished = new CompletableFuture<>();
    /** Written by the coordinator thread, read by status requests: guarded by itself. */
    private final Map<String, Long> phaseMillis = new LinkedHashMap<>();
    private final Map<Integer, PartStatus> parts = new TreeMap<>();
    private volatile State state = State.PLANNED;
    private volatile String error = "";

    public Reconfiguration(String job, String id, Plan plan, Ptc from, Map<Integer, InetSocketAddress> daemons, long step,
            DaemonLink link, Duration timeout, String token, int central, String sourceDir, long linkRate,
            InDoubtInfo inDoubt) {
        this.inDoubt = inDoubt;
        this.sourceDir = sourceDir;
        this.linkRate = linkRate;
        this.token = token;
        this.central = central;
        this.job = job;
        this.id = id;
        this.plan = plan;
        this.from = from;
        this.daemons = Map.copyOf(daemons);
        this.step = step;
        this.link = link;
        this.http = link.http();
        this.timeout = timeout;
    }

    public String id() {
        return id;
    }

    public State state() {
        return state;
    }

    /** The failure's reason, or null. */
    public String error() {
        return error.isEmpty() ? null : error;
    }

    public CompletableFuture<Void> finished() {
        return finished;
    }

    /** Whether it ended more than {@code ageNanos} before {@code nanoTime} (its status can be forgotten). */
    public boolean finishedBefore(long nanoTime, long ageNanos) {
        long f = finishedAt;
        return f != 0 && nanoTime - f > ageNanos;
    }

    /** Runs the whole reconfiguration on {@code background}. */
    public void start(ExecutorService background) {
        background.execute(() -> {
            try {
                run();
            } catch (Exception e) {
                error = e.getMessage() == null ? e.toString() : e.getMessage();
                state = State.ABORTED;
            } finally {
                finishedAt = System.nanoTime();
                finished.complete(null);
            }
        });
    }

    private List<Integer> destWorkers() {
        return plan.shards().stream().map(s -> s.destDevice().worker()).distinct().sorted().toList();
    }

    private void run() throws Exception {
        long t = System.nanoTime();
        for (int w : workersInvolved()) {
            if (!daemons.containsKey(w)) {
                throw new IOException("no daemon address for worker " + w);
            }
            try {
                HttpResponse<Void> r = http.send(request(w, "/api/v1/health").GET().build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() != 200) {
                    throw new IOException("health answered " + r.statusCode());
                }
            } catch (IOException e) {
                throw new IOException("daemon of worker " + w + " at " + daemons.get(w) + " is unreachable: "
                        + e.getMessage(), e);
            }
        }
        for (io.tenplex.transform.ShardPlan s : plan.shards()) {
            if (s.byteSize() > io.tenplex.store.memory.Allocator.MAX_CHUNK) {
                throw new IllegalArgumentException("shard " + s.key() + " of rank " + s.destRank() + " has " + s.byteSize()
                        + " bytes; new shards over 1 GiB are not supported yet (use more tensor parallelism)");
            }
        }
        PlanPaths.Result bound = PlanPaths.bind(plan, listSources());
        phase("check", t);
        state = State.EXECUTING;
        t = System.nanoTime();
        List<Integer> workers = destWorkers();
        boolean ok;
        if (central >= 0) {
            // Tenplex-Central: the central worker assembles everything, then every worker fetches its shards whole
            ok = executeParts(List.of(central), w -> PlanCodec.encodeCentral(job, id + "-c", w, bound.plan(),
                    from.worldSize(),
                    daemons, step, sourceDir), id + "-c");
            phase("central", t);
            ok = ok && executeParts(workers, w -> PlanCodec.encodeFromCentral(job, id, id + "-c", w, central,
                    bound.plan(), daemons, step, bound.generated()), id);
        } else {
            Map<Integer, Map<Integer, Long>> rates = linkRate > 0 ? FlowRates.rates(bound.plan(), linkRate) : Map.of();
            ok = executeParts(workers, w -> PlanCodec.encode(job, id, w, bound.plan(), from.worldSize(), daemons,
                    step, sourceDir, bound.generated()).toBuilder().putAllFlowRates(rates.getOrDefault(w, Map.of()))
                    .build(), id);
        }
        phase("execute", t);
        t = System.nanoTime();
        if (ok) {
            state = State.COMMITTING;
            if (commit(workers)) {
                dropCentral();
                phase("commit", t);
                // the final state last, so a reader that sees it also sees the whole report; a part
                // whose commit did not answer commits when it resolves (its error is reported)
                state = State.COMMITTED;
                return;
            }
        }
        dropCentral();
        if (error.isEmpty()) {
            error = parts.values().stream().filter(p -> !p.getError().isEmpty()).map(PartStatus::getError).findFirst()
                    .orElse("a part did not prepare");
        }
        for (int w : workers) {
            try {
                call(w, "/parts/" + id + "/abort", new byte[0]).get();
            } catch (Exception e) {
                // a daemon that is down has nothing staged that survives its restart
            }
        }
        phase("abort", t);
        state = State.ABORTED;
    }

    /**
     * Commits the commit point (the first worker) alone, then the others at once. When the commit
     * point refuses or does not answer, nobody has committed and the caller aborts everywhere; once
     * it has committed, parts in doubt learn from it that they must commit too ({@link InDoubt}).
     *
     * @return whether the commit point committed (the others' answers and failures are recorded)
     */
    private boolean commit(List<Integer> workers) {
        CommitHook.reached(0);
        int point = workers.get(0);
        if (!collect(workers.subList(0, 1), List.of(call(point, "/parts/" + id + "/commit", new byte[0])))
                && !"committed".equals(askPart(point))) {
            return false; // the commit point did not commit (its answer may have been lost: asked once more)
        }
        CommitHook.reached(1);
        List<Integer> rest = workers.subList(1, workers.size());
        List<CompletableFuture<PartStatus>> committed = new ArrayList<>();
        for (int w : rest) {
            committed.add(call(w, "/parts/" + id + "/commit", new byte[0]));
        }
        collect(rest, committed);
        return true;
    }

    /** The state of a worker's part, asked directly (or {@link InDoubt#UNREACHABLE}). */
    private String askPart(int worker) {
        WorkerPlan.Builder who = WorkerPlan.newBuilder().setJob(job).setPlanId(id);
        daemons.forEach((w, a) -> who.putDaemons(w, a.getHostString() + ":" + a.getPort()));
        return new PeerParts(who.build(), link).part(worker);
    }

    /** Lists every old rank's saved tree on the daemon of its worker (a rank with none saved nothing). */
    private Map<Integer, CheckpointLayout> listSources() throws IOException, InterruptedException {
        Map<Integer, CompletableFuture<HttpResponse<byte[]>>> asks = new TreeMap<>();
        for (int r = 0; r < from.worldSize(); r++) {
            asks.put(r, http.sendAsync(request(from.device(r).worker(), "/api/v1/dirs/job/" + job + "/" + sourceDir + "/"
                    + r + "?recursive=true").GET().build(), HttpResponse.BodyHandlers.ofByteArray()));
        }
        Map<Integer, CheckpointLayout> out = new TreeMap<>();
        ObjectMapper mapper = new ObjectMapper();
        for (Map.Entry<Integer, CompletableFuture<HttpResponse<byte[]>>> e : asks.entrySet()) {
            int rank = e.getKey();
            HttpResponse<byte[]> r;
            try {
                r = e.getValue().get();
            } catch (java.util.concurrent.ExecutionException x) {
                throw new IOException("listing rank " + rank + "'s saved state: " + x.getCause().getMessage(), x);
            }
            if (r.statusCode() == 404) {
                continue;
            }
            if (r.statusCode() != 200) {
                throw new IOException("listing rank " + rank + "'s saved state: " + r.statusCode() + " "
                        + new String(r.body(), java.nio.charset.StandardCharsets.UTF_8).strip());
            }
            String root = "/job/" + job + "/" + sourceDir + "/" + rank + "/";
            List<CheckpointLayout.Item> items = new ArrayList<>();
            for (com.fasterxml.jackson.databind.JsonNode n : mapper.readTree(r.body()).path("entries")) {
                String path = n.path("path").asText();
                if (path.startsWith(root)) {
                    boolean tensor = n.path("type").asText().equals("tensor");
                    items.add(new CheckpointLayout.Item(path.substring(root.length()), tensor, n.path("shape").size()));
                }
            }
            if (!items.isEmpty()) {
                out.put(rank, CheckpointLayout.of(items));
            }
        }
        return out;
    }

    private void phase(String name, long startNanos) {
        synchronized (phaseMillis) {
            phaseMillis.put(name, (System.nanoTime() - startNanos) / 1_000_000);
        }
    }

    private void dropCentral() {
        if (central >= 0) {
            try {
                call(central, "/parts/" + id + "-c/abort", new byte[0]).get();
            } catch (Exception e) {
                // the central part may never have started
            }
        }
    }

    /** Sends each worker its part and waits until all are prepared; false when any failed. */
    private boolean executeParts(List<Integer> workers, java.util.function.IntFunction<WorkerPlan> part, String planId) {
        List<CompletableFuture<PartStatus>> sent = new ArrayList<>();
        for (int w : workers) {
            WorkerPlan wp = part.apply(w).toBuilder().addAllParticipants(workers).setCoordinator(inDoubt.coordinator())
                    .setReconfiguration(id).setPreparedTimeoutMillis(inDoubt.preparedTimeoutMillis()).build();
            sent.add(call(w, "/parts", wp.toByteArray()));
        }
        if (!collect(workers, sent)) {
            return false;
        }
        List<CompletableFuture<PartStatus>> prepared = new ArrayList<>();
        for (int w : workers) {
            prepared.add(call(w, "/parts/" + planId + "/prepare", new byte[0]));
        }
        boolean ok = collect(workers, prepared);
        synchronized (parts) {
            return ok && workers.stream().allMatch(w -> parts.get(w).getState().equals("prepared"));
        }
    }

    private List<Integer> workersInvolved() {
        List<Integer> w = new ArrayList<>(destWorkers());
        for (Device d : from.devices()) {
            if (!w.contains(d.worker())) {
                w.add(d.worker());
            }
        }
        return w;
    }

    private boolean collect(List<Integer> workers, List<CompletableFuture<PartStatus>> calls) {
        boolean ok = true;
        for (int i = 0; i < workers.size(); i++) {
            try {
                PartStatus s = calls.get(i).get();
                synchronized (parts) {
                    parts.put(workers.get(i), s);
                }
            } catch (Exception e) {
                ok = false;
                if (error.isEmpty()) {
                    error = "worker " + workers.get(i) + ": " + (e.getCause() != null ? e.getCause().getMessage()
                            : e.getMessage());
                }
            }
        }
        return ok;
    }

    private HttpRequest.Builder request(int worker, String path) {
        InetSocketAddress a = daemons.get(worker);
        HttpRequest.Builder b = HttpRequest.newBuilder(link.uri(a, path))
                .timeout(timeout);
        return token == null ? b : b.header("Authorization", "Bearer " + token);
    }

    private CompletableFuture<PartStatus> call(int worker, String path, byte[] body) {
        HttpRequest req = request(worker, JobPaths.API_PREFIX + job + path).header("Content-Type", PROTOBUF)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
        return http.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray()).thenApply(r -> {
            if (r.statusCode() >= 300) {
                throw new IllegalStateException(r.statusCode() + " " + new String(r.body()).strip());
            }
            try {
                return PartStatus.parseFrom(r.body());
            } catch (IOException e) {
                throw new IllegalStateException("bad answer from worker " + worker + ": " + e.getMessage());
            }
        });
    }

    /** Asks every part for its live status while executing (for progress); completes when all answered. */
    public CompletableFuture<Void> refresh() {
        if (state != State.EXECUTING) {
            return CompletableFuture.completedFuture(null);
        }
        List<CompletableFuture<Void>> asks = new ArrayList<>();
        for (int w : destWorkers()) {
            HttpRequest req = request(w, JobPaths.API_PREFIX + job + "/parts/" + id).GET().build();
            asks.add(http.sendAsync(req, HttpResponse.BodyHandlers.ofByteArray()).thenAccept(r -> {
                if (r.statusCode() == 200) {
                    try {
                        PartStatus p = PartStatus.parseFrom(r.body());
                        synchronized (parts) {
                            parts.put(w, p);
                        }
                    } catch (IOException e) {
                        // keep the last known status
                    }
                }
            }).exceptionally(t -> null));
        }
        return CompletableFuture.allOf(asks.toArray(new CompletableFuture[0]));
    }

    /** State, phases, per-worker progress and the plan's report, as JSON. */
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("job", job);
        m.put("plan", id);
        m.put("from", plan.from().toString());
        m.put("to", plan.to().toString());
        m.put("state", state.name().toLowerCase(java.util.Locale.ROOT));
        m.put("mode", central >= 0 ? "central (worker " + central + ")" : "peer-to-peer");
        m.put("source", "/job/" + job + "/" + sourceDir);
        if (linkRate > 0 && central < 0) {
            m.put("pacedForLinkRate", linkRate);
        }
        if (!error.isEmpty()) {
            m.put("error", error);
        }
        synchronized (phaseMillis) {
            m.put("phaseMillis", new LinkedHashMap<>(phaseMillis)); // a copy: the coordinator may still add phases
        }
        Map<String, Object> progress = new LinkedHashMap<>();
        synchronized (parts) {
            parts.forEach((w, p) -> {
                Map<String, Object> x = new LinkedHashMap<>();
                x.put("state", p.getState());
                x.put("bytesDone", p.getBytesDone());
                x.put("bytesTotal", p.getBytesTotal());
                x.put("localBytes", p.getLocalBytes());
                x.put("remoteBytes", p.getRemoteBytes());
                x.put("retries", p.getRetries());
                x.put("corrupted", p.getCorrupted());
                if (p.getExecuteNanos() > 0) {
                    x.put("executeMillis", p.getExecuteNanos() / 1_000_000);
                }
                progress.put(Integer.toString(w), x);
            });
        }
        m.put("workers", progress);
        PlanReport r = plan.report();
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("onDeviceBytes", r.onDevice());
        report.put("intraWorkerBytes", r.intraWorker());
        report.put("interWorkerBytes", r.interWorker());
        report.put("lowerBoundBytes", r.lowerBound());
        report.put("keptBytes", r.kept());
        report.put("sentByWorker", r.sentByWorker());
        report.put("receivedByWorker", r.receivedByWorker());
        m.put("report", report);
        return m;
    }

    public static String json(ObjectMapper mapper, Object o) {
        try {
            return mapper.writeValueAsString(o);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
