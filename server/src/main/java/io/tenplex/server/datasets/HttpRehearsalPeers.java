package io.tenplex.server.datasets;

import io.tenplex.datasets.rehearsal.RehearsalPeers;
import io.tenplex.datasets.rehearsal.Sample;
import io.tenplex.datasets.rehearsal.Tuples;
import io.tenplex.jobs.JobLayout;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The rehearsal buffers' calls to other daemons over HTTP (routes of {@link RehearsalRoutes}), with the
 * scheme, trust and token of the {@link DaemonLink}; asynchronous (the JDK client's own threads). Every
 * answer is read within a byte limit and decoded with its counts checked; anything but the expected
 * status fails the future with the daemon's reason.
 */
public final class HttpRehearsalPeers implements RehearsalPeers {
    /** The largest JSON answer (counts) read from a peer. */
    static final int MAX_JSON = 16 << 20;
    /** The largest batch answer read from a peer. */
    static final long MAX_BATCH = 1L << 30;
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    private final DaemonLink link;

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
        return link.http().sendAsync(req, LimitedBody.handler(limit)).thenApply(r -> answer(peer, what, r));
    }

    private static byte[] answer(String peer, String what, HttpResponse<byte[]> r) {
        if (r.statusCode() != 200) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, peer + " rehearsal" + what + ": " + r.statusCode()
                    + " " + new String(r.body(), StandardCharsets.UTF_8).strip());
        }
        return r.body();
    }
}
