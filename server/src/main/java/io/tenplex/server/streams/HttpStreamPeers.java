package io.tenplex.server.streams;

import io.tenplex.datasets.streams.Sample;
import io.tenplex.datasets.streams.StreamConfig;
import io.tenplex.datasets.streams.StreamPeers;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The coordinator's calls to the other daemons of a stream over HTTP (the peer-only routes of
 * {@link StreamRoutes}), with the scheme, trust and token of the {@link DaemonLink}. A daemon that
 * cannot be reached or answers an error fails the call (a 502 naming it; its 409 stays a conflict).
 */
public final class HttpStreamPeers implements StreamPeers {
    private static final Duration TIMEOUT = Duration.ofMinutes(2);

    private final DaemonLink link;

    public HttpStreamPeers(DaemonLink link) {
        this.link = link;
    }

    static String path(String job, String what) {
        return JobLayout.API_PREFIX + job + "/streams" + (what.isEmpty() ? "" : "/" + what);
    }

    @Override
    public void ping(String peer) {
        send(peer, "GET", "/api/v1/health", new byte[0]);
    }

    @Override
    public void create(String peer, String job, StreamConfig config) {
        send(peer, "PUT", path(job, "config") + "?create=true", StreamJson.config(config));
    }

    @Override
    public void configure(String peer, String job, StreamConfig config, boolean frozen) {
        send(peer, "PUT", path(job, "config") + "?frozen=" + frozen, StreamJson.config(config));
    }

    @Override
    public void export(String peer, String job, List<String> expectedRanks, Consumer<Map<Integer, List<Sample>>> page) {
        HttpResponse<byte[]> r = call(peer, "POST", path(job, "export"), StreamJson.ranks(expectedRanks));
        page.accept(StreamWire.moved(r.body()));
        while (r.headers().firstValue(StreamRoutes.MORE_HEADER).isPresent()) {
            r = call(peer, "POST", path(job, "export") + "?next=true", new byte[0]);
            page.accept(StreamWire.moved(r.body()));
        }
    }

    @Override
    public void importSamples(String peer, String job, Map<Integer, List<Sample>> byRank) {
        send(peer, "POST", path(job, "import"), StreamWire.moved(byRank));
    }

    @Override
    public void giveBack(String peer, String job, int rank, List<Sample> samples) {
        send(peer, "POST", path(job, "ranks/" + rank + "/returned"), StreamWire.moved(Map.of(rank, samples)));
    }

    @Override
    public int closes(String peer, String job) {
        return StreamJson.read(send(peer, "GET", path(job, ""), new byte[0])).path("closes").asInt();
    }

    @Override
    public void unfreeze(String peer, String job) {
        send(peer, "POST", path(job, "unfreeze"), new byte[0]);
    }

    @Override
    public void end(String peer, String job) {
        send(peer, "POST", path(job, "end") + "?local=true", new byte[0]);
    }

    @Override
    public void delete(String peer, String job) {
        send(peer, "DELETE", path(job, "") + "?local=true", new byte[0]);
    }

    private byte[] send(String peer, String method, String pathAndQuery, byte[] body) {
        return call(peer, method, pathAndQuery, body).body();
    }

    /** A call to a peer; a failure is a 502 naming it (a 409 stays a conflict: another step holds the stream). */
    private HttpResponse<byte[]> call(String peer, String method, String pathAndQuery, byte[] body) {
        try {
            HttpRequest req = link.authorize(HttpRequest.newBuilder(link.uri(peer, pathAndQuery))).timeout(TIMEOUT)
                    .header("Content-Type", body.length > 0 && body[0] == '{' ? "application/json"
                            : "application/octet-stream")
                    .method(method, HttpRequest.BodyPublishers.ofByteArray(body)).build();
            HttpResponse<byte[]> r = link.http().send(req, HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() / 100 != 2) {
                String m = "daemon " + peer + " answered " + method + " " + pathAndQuery + " with " + r.statusCode() + ": "
                        + new String(r.body(), StandardCharsets.UTF_8).strip();
                throw new StoreException(r.statusCode() == 409 ? StoreException.Kind.CONFLICT
                        : StoreException.Kind.BAD_GATEWAY, m);
            }
            return r;
        } catch (IOException e) {
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + peer + " unreachable for " + method
                    + " " + pathAndQuery + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "interrupted while calling daemon " + peer);
        } catch (IllegalArgumentException e) { // an address no URI takes
            throw new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + peer + ": " + e.getMessage());
        }
    }
}
