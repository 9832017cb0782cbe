package io.tenplex.server.datasets;

import io.tenplex.datasets.rehearsal.RehearsalPeers;
import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The rehearsal buffers' calls to other daemons over HTTP (routes of {@link RehearsalRoutes}), with the
 * scheme, trust and token of the {@link DaemonLink}; asynchronous: each call is a blocking {@code send}
 * on this client's pool of reused threads. (The JDK client's {@code sendAsync} hands every answer to
 * the common fork-join pool, which on a host of two or fewer CPUs starts a new thread per task: a
 * thread per peer answer, up to six per draw.) Every answer is read within a byte limit and decoded
 * with its counts checked; anything but the expected status fails the future with the daemon's reason.
 */
public final class HttpRehearsalPeers implements RehearsalPeers {
    /** The largest JSON answer (counts) read from a peer. */
    static final int MAX_JSON = 16 << 20;
    /** The largest batch answer read from a peer. */
    static final long MAX_BATCH = 1L << 30;
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    private final DaemonLink link;
    private final ExecutorService calls = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "rehearsal-peer-call");
        t.setDaemon(true);
        return t;
    });

    public HttpRehearsalPeers(DaemonLink link) {
        this.link = link;
    }

    @Override
    public CompletableFuture<Counts> counts(String peer, String job) {
        return send(peer, job, "/counts", HttpRequest.BodyPublishers.noBody(), "GET", MAX_JSON)
                .thenApply(b -> RehearsalJson.counts(RehearsalJson.read(b)));
    }

    @Override
    public CompletableFuture<Counts> hold(String peer, String job) {
        return send(peer, job, "/hold", HttpRequest.BodyPublishers.noBody(), "POST", MAX_JSON)
                .thenApply(b -> RehearsalJson.counts(RehearsalJson.read(b)));
    }

    @Override
    public CompletableFuture<List<Sample>> fetch(String peer, String job, List<Slot> slots) {
        long limit = Math.min(MAX_BATCH, 4 + (long) slots.size() * (RehearsalRoutes.MAX_SAMPLE_BYTES + 4));
        return send(peer, job, "/fetch", HttpRequest.BodyPublishers.ofByteArray(SlotWire.request(slots)), "POST", limit)
                .thenApply(b -> Tuples.decode(b, slots.size(), RehearsalRoutes.MAX_SAMPLE_BYTES));
    }

    @Override
    public CompletableFuture<Void> prepare(String peer, String job, Moves moves) {
        byte[] body = RehearsalJson.moves(moves).toString().getBytes(StandardCharsets.UTF_8);
        return send(peer, job, "/prepare", HttpRequest.BodyPublishers.ofByteArray(body), "POST", MAX_JSON)
                .thenApply(b -> null);
    }

    @Override
    public CompletableFuture<Void> finish(String peer, String job, boolean commit) {
        return send(peer, job, commit ? "/commit" : "/abort", HttpRequest.BodyPublishers.noBody(), "POST", MAX_JSON)
                .thenApply(b -> null);
    }

    private CompletableFuture<byte[]> send(String peer, String job, String what, HttpRequest.BodyPublisher body,
            String method, long limit) {
        HttpRequest req = link.authorize(HttpRequest.newBuilder(link.uri(peer, JobLayout.API_PREFIX + job
                + RehearsalRoutes.SEGMENT + what))).timeout(TIMEOUT).method(method, body).build();
        return CompletableFuture.supplyAsync(() -> {
            try {
                return answer(peer, what, link.http().send(req, LimitedBody.handler(limit)));
            } catch (IOException e) {
                throw new CompletionException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CompletionException(e);
            }
        }, calls);
    }

    private static byte[] answer(String peer, String what, HttpResponse<byte[]> r) {
        if (r.statusCode() != 200) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, peer + " rehearsal" + what + ": " + r.statusCode()
                    + " " + new String(r.body(), StandardCharsets.UTF_8).strip());
        }
        return r.body();
    }
}
