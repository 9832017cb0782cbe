package io.tenplex.server.streams;

import io.tenplex.datasets.streams.Sample;
import io.tenplex.datasets.streams.StreamConfig;
import io.tenplex.datasets.streams.StreamService;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.ControlHandler;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The routes of a job's streamed samples, {@code /api/v1/jobs/<job>/streams[/...]} (served through
 * the job routes): {@code POST} (create over the ranks' daemons), {@code GET} (status here),
 * {@code DELETE}; {@code POST samples} (a producer's push: {@code key}, {@code rank}, {@code wait}
 * in ms; 429 with {@code Retry-After} while the buffer stays full), {@code GET ranks/<r>/batch}
 * ({@code size}, {@code wait}; {@link StreamWire}), {@code POST close} (a producer is done),
 * {@code POST end}, {@code POST partition} (new ranks); and the coordinator's peer calls
 * {@code PUT config}, {@code POST export|import|unfreeze}, and a relaying daemon's
 * {@code POST ranks/<r>/returned} (a relayed batch its reader never got) and
 * {@code POST ranks/<r>/withdraw?read=<id>} (a relayed read whose reader went away). A push may carry
 * {@code id}, the producer's id of the sample: a retry with the same id is stored at most once
 * (answered {@code duplicate}). Pushes and reads for a rank held by another daemon are relayed to it;
 * a push or read whose client goes away while it waits is withdrawn; nothing waits on the event loop.
 */
public final class StreamRoutes implements ControlHandler {
    /** The longest a push or a read may wait (the server's idle timeout is longer). */
    static final long MAX_WAIT_MILLIS = 30_000;
    /** Set on an export page when more pages follow. */
    static final String MORE_HEADER = "X-Tenplex-More";

    private final StreamService streams;
    private final StreamRelay relay;
    private final RelayedReads relayed = new RelayedReads();

    public StreamRoutes(StreamService streams, DaemonLink link) {
        this.streams = streams;
        this.relay = new StreamRelay(link);
    }

    @Override
    public CompletableFuture<Response> handle(Request req) {
        try {
            String[] p = req.path().substring(JobLayout.API_PREFIX.length()).split("/");
            String job = p[0];
            new JobLayout(job); // checks the job's name
            String what = p.length > 2 ? p[2] : "";
            if (what.equals("ranks") && p.length == 5 && p[4].equals("batch") && req.method().equals("GET")) {
                return batch(job, rank(p[3]), req);
            }
            if (what.equals("ranks") && p.length == 5 && p[4].equals("returned") && req.method().equals("POST")) {
                return returned(job, rank(p[3]), req);
            }
            if (what.equals("ranks") && p.length == 5 && p[4].equals("withdraw") && req.method().equals("POST")) {
                relayed.withdraw(required(req, "read"));
                return done(Response.text(200, "withdrawn"));
            }
            if (p.length > 3) {
                throw notFound(req);
            }
            return route(job, req.method() + " " + what, req);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletableFuture<Response> route(String job, String key, Request req) {
        boolean local = "true".equals(req.param("local"));
        return switch (key) {
            case "POST " -> streams.create(job, allowed(StreamJson.config(StreamJson.read(req.body()), self())))
                    .thenApply(s -> StreamJson.ok(201, s));
            case "GET " -> done(StreamJson.ok(200, StreamJson.withMemory(streams.status(job), streams.memory())));
            case "DELETE " -> local ? done(deleteLocal(job)) : streams.delete(job)
                    .thenApply(v -> Response.text(200, "deleted the stream of " + job));
            case "POST samples" -> push(job, req);
            case "POST close" -> close(job, req);
            case "POST end" -> local ? done(endLocal(job)) : streams.end(job).thenApply(s -> StreamJson.ok(200, s));
            case "POST partition" -> partition(job, req);
            default -> peerRoute(job, key, req);
        };
    }

    /** The coordinator's calls (daemon to daemon). */
    private CompletableFuture<Response> peerRoute(String job, String key, Request req) {
        return switch (key) {
            case "PUT config" -> {
                StreamConfig c = allowed(StreamJson.config(StreamJson.read(req.body()), self()));
                if ("true".equals(req.param("create"))) {
                    streams.createLocal(job, c);
                } else {
                    streams.configure(job, c, "true".equals(req.param("frozen")));
                }
                yield done(Response.text(200, "configured"));
            }
            case "POST export" -> done(export(job, req));
            case "POST import" -> {
                streams.importLocal(job, StreamWire.moved(req.body()));
                yield done(Response.text(200, "imported"));
            }
            case "POST unfreeze" -> {
                streams.unfreezeLocal(job);
                yield done(Response.text(200, "unfrozen"));
            }
            default -> throw notFound(req);
        };
    }

    private StreamConfig allowed(StreamConfig c) {
        streams.checkAllowed(c.daemons());
        return c;
    }

    private CompletableFuture<Response> partition(String job, Request req) {
        java.util.List<String> ranks = StreamJson.ranks(StreamJson.read(req.body()));
        streams.checkAllowed(ranks);
        return streams.repartition(job, ranks).thenApply(s -> StreamJson.ok(200, s));
    }

    /** A page of an export (the first freezes; {@code next=true} the rest); {@link #MORE_HEADER} while more are left. */
    private Response export(String job, Request req) {
        Map<Integer, java.util.List<Sample>> page;
        if ("true".equals(req.param("next"))) {
            page = streams.exportNext(job);
        } else {
            page = streams.exportLocal(job, req.body().length == 0 ? null
                    : StreamJson.ranks(StreamJson.read(req.body())));
        }
        byte[] body = StreamWire.moved(page);
        return new Response(200, "application/octet-stream", body, streams.exporting(job) ? Map.of(MORE_HEADER, "true")
                : Map.of());
    }

    private CompletableFuture<Response> push(String job, Request req) {
        String r = req.param("rank");
        String key = req.param("key") != null ? req.param("key") : req.param("id"); // a retry goes where its first try went
        int rank = r == null ? streams.pick(job, key) : rank(r);
        long wait = waitMillis(req);
        boolean moving = req.param("hop") != null || streams.frozen(job);
        if (moving && (rank < 0 || rank >= streams.config(job).dp())) { // a config of another dp meanwhile
            return done(StreamJson.retry("the ranks of job " + job + "'s stream are being re-partitioned; push again", 1));
        }
        if (!streams.holds(job, rank)) {
            if (req.param("hop") != null) {
                return done(StreamJson.retry("rank " + rank + " of job " + job + " is being moved; push again", 1));
            }
            return relay.relay(streams.owner(job, rank), req, Map.of("rank", Integer.toString(rank)), wait);
        }
        return streams.push(job, rank, req.body(), req.param("id"), wait, req.closed()).thenApply(p -> switch (p.outcome()) {
            case "accepted", "duplicate" -> StreamJson.ok(200, p);
            case "ended" -> new Response(409, "text/plain; charset=utf-8", ("production of job " + job
                    + "'s stream has ended\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            case "moved" -> StreamJson.retry("rank " + rank + " of job " + job + " is being moved; push again", 1);
            case "withdrawn" -> StreamJson.retry("the push was withdrawn: its connection closed while it waited", 1);
            case "memory" -> StreamJson.retry("this daemon's stream memory (" + streams.memory().budget() + " bytes) is "
                    + "full until trainers read; push again", 1);
            default -> StreamJson.retry("the buffer of rank " + rank + " of job " + job + " stayed full for "
                    + wait + " ms; push again", 1);
        });
    }

    private CompletableFuture<Response> batch(String job, int rank, Request req) {
        int size = intParam(req, "size", 1);
        long wait = waitMillis(req);
        boolean hop = req.param("hop") != null;
        if (!streams.holds(job, rank)) {
            if (hop) {
                return done(StreamRelay.relayedBatch(rank, java.util.List.of(), false, null));
            }
            return relay.relayRead(streams.owner(job, rank), req, wait);
        }
        return read(job, rank, size, wait, req)
                .thenApply(b -> hop ? StreamRelay.relayedBatch(rank, b.taken(), b.ended(), b.unsent())
                        : new Response(200, "application/octet-stream", StreamWire.batch(b.samples(), b.ended()),
                        Map.of(), b.unsent())); // a batch the reader never got goes back
    }

    /**
     * A read here: a reader that goes away while it waits takes none; so does a relayed read that its
     * relaying daemon withdraws ({@code read}: its id there).
     */
    private CompletableFuture<io.tenplex.datasets.streams.StreamBatch> read(String job, int rank, int size, long wait,
            Request req) {
        String id = req.param("hop") == null ? null : req.param("read");
        if (id == null) {
            return streams.read(job, rank, size, wait, req.closed());
        }
        CompletableFuture<?> gone = CompletableFuture.anyOf(req.closed(), relayed.arrive(id));
        try {
            return streams.read(job, rank, size, wait, gone).whenComplete((b, t) -> relayed.answered(id));
        } catch (RuntimeException e) {
            relayed.answered(id);
            throw e;
        }
    }

    /** A relayed batch that the relaying daemon could not hand to its reader, sent back (peer-only). */
    private CompletableFuture<Response> returned(String job, int rank, Request req) {
        Map<Integer, java.util.List<Sample>> back = StreamWire.moved(req.body());
        int max = streams.config(job).spec().maxSampleBytes();
        for (Map.Entry<Integer, java.util.List<Sample>> e : back.entrySet()) { // all checked before any is taken
            if (e.getKey() != rank) {
                throw new IllegalArgumentException("samples of rank " + e.getKey() + " returned to rank " + rank);
            }
            for (Sample s : e.getValue()) {
                if (s.data().length > max) {
                    throw new IllegalArgumentException("a returned sample of " + s.data().length + " bytes, over job "
                            + job + "'s limit of " + max);
                }
            }
        }
        int n = 0;
        for (Map.Entry<Integer, java.util.List<Sample>> e : back.entrySet()) {
            streams.giveBack(job, rank, e.getValue());
            n += e.getValue().size();
        }
        return done(Response.text(200, "took back " + n + " samples"));
    }

    /** A producer's close is counted on rank 0's daemon. */
    private CompletableFuture<Response> close(String job, Request req) {
        if (!streams.holds(job, 0) && req.param("hop") == null) {
            return relay.relay(streams.owner(job, 0), req, Map.of(), 0);
        }
        return streams.close(job).thenApply(n -> StreamJson.ok(200, Map.of("closes", n)));
    }

    private Response endLocal(String job) {
        streams.endLocal(job);
        return Response.text(200, "ended");
    }

    private Response deleteLocal(String job) {
        streams.deleteLocal(job);
        return Response.text(200, "deleted");
    }

    private String self() {
        return streams.selfAddress();
    }

    private static long waitMillis(Request req) {
        long w = intParam(req, "wait", 0);
        if (w < 0 || w > MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException("wait " + w + " ms (expected: 0 <= wait <= " + MAX_WAIT_MILLIS + ")");
        }
        return w;
    }

    private static String required(Request req, String name) {
        String v = req.param(name);
        if (v == null) {
            throw new IllegalArgumentException("parameter " + name + " is missing");
        }
        return v;
    }

    private static int rank(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("rank '" + s + "' is not a number");
        }
    }

    private static int intParam(Request req, String name, int dflt) {
        String v = req.param(name);
        try {
            return v == null ? dflt : Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " '" + v + "' is not a number");
        }
    }

    private static StoreException notFound(Request req) {
        return StoreException.notFound("no stream route " + req.method() + " " + req.path());
    }

    private static CompletableFuture<Response> done(Response r) {
        return CompletableFuture.completedFuture(r);
    }
}
