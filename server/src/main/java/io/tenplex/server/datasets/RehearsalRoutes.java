package io.tenplex.server.datasets;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.tenplex.datasets.rehearsal.RankBuffer;
import io.tenplex.datasets.rehearsal.RehearsalService;
import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import io.tenplex.server.ControlHandler;
import io.tenplex.store.StoreException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The rehearsal routes under {@code /api/v1/jobs/<job>/rehearsal} (the job routes hand them over):
 * {@code PUT} (configure: JSON {@code classes, perClass, candidates, batch, seed}), {@code GET}
 * (status), {@code DELETE}; per rank {@code POST <rank>/update} (a batch of candidates,
 * {@link Tuples}; with {@code draw=N&scope=...} it answers the next draw instead, in the same round
 * trip; {@code waited=MICROS}: how long the trainer's last augment waited for its draw, for
 * {@code /metrics}) and {@code GET <rank>/sample?r=N&scope=global|local} (a batch of up to N representatives); {@code POST repartition} (JSON {@code {"ranks": {"<rank>": "host:port"}}}); and,
 * daemon to daemon, {@code GET counts}, {@code POST fetch} ({@link SlotWire}), {@code POST hold},
 * {@code prepare}, {@code commit} and {@code abort}. While a re-partition holds the job's updates off,
 * an update is answered 429 with {@code Retry-After}. Everything runs on the given executor, never on
 * the event loop.
 */
public final class RehearsalRoutes implements ControlHandler {
    public static final String SEGMENT = "/rehearsal";
    /** The most bytes one representative's tuple takes (bodies are also bounded by the control body limit). */
    public static final int MAX_SAMPLE_BYTES = 16 << 20;
    /** The most samples one update carries, and the most representatives one draw asks for. */
    public static final int MAX_BATCH = 1 << 16;

    private final RehearsalService service;
    private final Executor work;

    public RehearsalRoutes(RehearsalService service, Executor work) {
        this.service = service;
        this.work = work;
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = req.path().split("/");
            // "", api, v1, jobs, <job>, rehearsal, ...
            String job = p[4];
            String a = p.length > 6 ? p[6] : "";
            String b = p.length > 7 ? p[7] : "";
            if (p.length > 8 || !p[5].equals("rehearsal")) {
                throw StoreException.notFound("no rehearsal route " + req.method() + " " + req.path());
            }
            if (!b.isEmpty()) {
                return rankRoute(job, RehearsalJson.rank(a), b, req);
            }
            return CompletableFuture.supplyAsync(() -> jobRoute(job, a, req), work).thenCompose(f -> f);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Response> jobRoute(String job, String what, Request req) {
        return switch (req.method() + " " + what) {
            case "PUT " -> done(configure(job, req));
            case "GET " -> done(RehearsalJson.ok(200, status(job)));
            case "DELETE " -> done(service.drop(job) ? Response.text(200, "dropped the rehearsal buffer of " + job)
                    : notFound(job));
            case "GET counts" -> done(RehearsalJson.ok(200, RehearsalJson.counts(service.counts(job))));
            case "POST fetch" -> done(batch(service.read(job, SlotWire.slots(req.body()))));
            case "POST hold" -> done(RehearsalJson.ok(200, RehearsalJson.counts(service.hold(job))));
            case "POST prepare" -> done(prepare(job, req));
            case "POST commit", "POST abort" -> {
                service.finish(job, what.equals("commit"));
                yield done(Response.text(200, what + " " + job));
            }
            case "POST repartition" -> done(repartition(job, req));
            default -> throw StoreException.notFound("no rehearsal route " + req.method() + " " + req.path());
        };
    }

    private CompletableFuture<Response> rankRoute(String job, int rank, String what, Request req) {
        if (req.method().equals("POST") && what.equals("update")) {
            if (req.param("draw") != null) { // the update, then the next draw, in one round trip
                int r = intParam(req, "draw", 1, MAX_BATCH);
                boolean global = global(req);
                return retryLater(CompletableFuture.supplyAsync(() -> {
                    update(job, rank, req);
                    return service.sample(job, rank, r, global);
                }, work).thenCompose(f -> f).thenApply(RehearsalRoutes::batch));
            }
            return retryLater(CompletableFuture.supplyAsync(() -> update(job, rank, req), work));
        }
        if (req.method().equals("GET") && what.equals("sample")) {
            int r = intParam(req, "r", 1, MAX_BATCH);
            return draw(job, rank, r, global(req));
        }
        throw StoreException.notFound("no rehearsal route " + req.method() + " " + req.path());
    }

    private CompletableFuture<Response> draw(String job, int rank, int r, boolean global) {
        return CompletableFuture.supplyAsync(() -> service.sample(job, rank, r, global), work)
                .thenCompose(f -> f).thenApply(RehearsalRoutes::batch); // where the draw completes: never an event loop
    }

    private static boolean global(Request req) {
        String scope = req.param("scope") == null ? "global" : req.param("scope");
        if (!scope.equals("global") && !scope.equals("local")) {
            throw new IllegalArgumentException("scope '" + scope + "' (expected: global or local)");
        }
        return scope.equals("global");
    }

    private Response configure(String job, Request req) {
        boolean made = service.configure(job, RehearsalJson.config(RehearsalJson.read(req.body())));
        return RehearsalJson.ok(made ? 201 : 200, status(job));
    }

    private ObjectNode status(String job) {
        RehearsalService.Status s = service.status(job);
        ObjectNode n = RehearsalJson.counts(new io.tenplex.datasets.rehearsal.RehearsalPeers.Counts(s.daemon(),
                s.config(), s.ranks()));
        n.put("representatives", s.ranks().values().stream().mapToLong(c -> java.util.Arrays.stream(c).sum()).sum());
        n.put("bytes", s.bytes());
        return n;
    }

    private Response update(String job, int rank, Request req) {
        List<Sample> candidates = Tuples.decode(req.body(), MAX_BATCH, MAX_SAMPLE_BYTES);
        long waited = req.param("waited") == null ? -1 : intParam(req, "waited", 0, Integer.MAX_VALUE);
        RankBuffer.Offered o = service.update(job, rank, candidates);
        if (waited >= 0) {
            service.augmented(job, rank, waited);
        }
        ObjectNode n = RehearsalJson.JSON.createObjectNode().put("appended", o.appended()).put("replaced", o.replaced());
        int[] counts = service.status(job).ranks().get(rank);
        var a = n.putArray("counts");
        for (int c : counts) {
            a.add(c);
        }
        return RehearsalJson.ok(200, n);
    }

    private Response prepare(String job, Request req) {
        try {
            service.prepare(job, RehearsalJson.moves(RehearsalJson.read(req.body())));
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "rehearsal prepare of " + job + ": " + e);
        }
        return Response.text(200, "prepared " + job);
    }

    private Response repartition(String job, Request req) {
        try {
            RehearsalService.Repartitioned r = service.repartition(job, RehearsalJson.targets(RehearsalJson.read(
                    req.body())));
            return RehearsalJson.ok(200, r);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "rehearsal re-partition of " + job + ": " + e);
        }
    }

    /** An update refused while a re-partition holds updates off: 429, retry after a second. */
    private static CompletableFuture<Response> retryLater(CompletableFuture<Response> f) {
        return f.exceptionally(e -> {
            Throwable t = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
            if (t instanceof StoreException s && s.kind() == StoreException.Kind.UNAVAILABLE) {
                Response r = Response.text(429, s.getMessage());
                return new Response(429, r.contentType(), r.body(), java.util.Map.of("Retry-After", "1"));
            }
            throw e instanceof RuntimeException x ? x : new java.util.concurrent.CompletionException(e);
        });
    }

    private static Response batch(List<Sample> samples) {
        return new Response(200, "application/octet-stream", Tuples.encode(samples));
    }

    private static Response notFound(String job) {
        throw StoreException.notFound("job " + job + " has no rehearsal buffer on this daemon");
    }

    private static CompletableFuture<Response> done(Response r) {
        return CompletableFuture.completedFuture(r);
    }

    private static int intParam(Request req, String name, int min, int max) {
        String v = req.param(name);
        try {
            int n = Integer.parseInt(v);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(name + " '" + v + "' (expected: " + min + " <= " + name + " <= " + max + ")");
    }
}
