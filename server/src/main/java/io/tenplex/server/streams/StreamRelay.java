package io.tenplex.server.streams;

import io.tenplex.datasets.streams.Sample;
import io.tenplex.server.ControlHandler.Request;
import io.tenplex.server.ControlHandler.Response;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Relays a push or a read to the daemon that holds the rank (one hop: the relayed request carries
 * {@code hop=1} and is never relayed again), without waiting on a thread; the answer's status,
 * body and {@code Retry-After} come back as they are. When the client's connection closes while the
 * relayed request waits, the relayed request is cancelled (its connection closed), so the holding
 * daemon withdraws the waiting push or read. A relayed read is answered in the moved-samples form
 * ({@link StreamWire}, with ids and read counts) and turned into a batch here; a batch that cannot
 * be written to the reader is sent back to the holding daemon ({@code POST .../returned}).
 */
final class StreamRelay {
    /** The content type of a relayed batch: moved samples. */
    static final String SAMPLES = "application/x-tenplex-samples";
    /** Set on a relayed batch when the stream has ended for the rank. */
    static final String ENDED_HEADER = "X-Tenplex-Ended";
    private static final Logger LOG = LoggerFactory.getLogger(StreamRelay.class);

    private final DaemonLink link;

    StreamRelay(DaemonLink link) {
        this.link = link;
    }

    /** The holding daemon's answer to a relayed read: the samples with ids and read counts. */
    static Response relayedBatch(int rank, List<Sample> samples, boolean ended, Runnable unsent) {
        return new Response(200, SAMPLES, StreamWire.moved(samples.isEmpty() ? Map.of() : Map.of(rank, samples)),
                ended ? Map.of(ENDED_HEADER, "true") : Map.of(), unsent);
    }

    CompletableFuture<Response> relay(String owner, Request req, Map<String, String> set, long waitMillis) {
        Map<String, List<String>> params = new HashMap<>(req.params());
        set.forEach((k, v) -> params.put(k, List.of(v)));
        params.put("hop", List.of("1"));
        HttpRequest.Builder b = link.authorize(HttpRequest.newBuilder(link.uri(owner, req.path() + "?" + query(params))))
                .timeout(Duration.ofMillis(waitMillis).plusSeconds(30))
                .method(req.method(), HttpRequest.BodyPublishers.ofByteArray(req.body()));
        if (req.contentType() != null) {
            b.header("Content-Type", req.contentType());
        }
        CompletableFuture<HttpResponse<byte[]>> sent = link.http().sendAsync(b.build(),
                HttpResponse.BodyHandlers.ofByteArray());
        req.closed().thenRun(() -> sent.cancel(true)); // the client gave up: so does the relayed request
        return sent.handle((r, t) -> {
            if (t != null) {
                throw new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + owner
                        + " that holds the rank cannot be reached: " + t.getMessage());
            }
            if (r.statusCode() == 200 && r.headers().firstValue("Content-Type").orElse("").equals(SAMPLES)) {
                return batch(owner, req.path(), r);
            }
            Map<String, String> h = new HashMap<>();
            r.headers().firstValue("Retry-After").ifPresent(v -> h.put("Retry-After", v));
            r.headers().firstValue("X-Tenplex-Error-Code").ifPresent(v -> h.put("X-Tenplex-Error-Code", v));
            return new Response(r.statusCode(), r.headers().firstValue("Content-Type")
                    .orElse("application/octet-stream"), r.body(), h);
        });
    }

    /** A relayed batch for the reader; if it cannot be written, its samples go back to {@code owner}. */
    private Response batch(String owner, String path, HttpResponse<byte[]> r) {
        List<byte[]> data = new ArrayList<>();
        StreamWire.moved(r.body()).values().forEach(l -> l.forEach(s -> data.add(s.data())));
        boolean ended = r.headers().firstValue(ENDED_HEADER).isPresent();
        Runnable unsent = data.isEmpty() ? null : () -> giveBack(owner, path, r.body(), data.size());
        return new Response(200, "application/octet-stream", StreamWire.batch(data, ended), Map.of(), unsent);
    }

    private void giveBack(String owner, String batchPath, byte[] samples, int n) {
        String path = batchPath.substring(0, batchPath.length() - "batch".length()) + "returned";
        HttpRequest req = link.authorize(HttpRequest.newBuilder(link.uri(owner, path))).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/octet-stream")
                .POST(HttpRequest.BodyPublishers.ofByteArray(samples)).build();
        link.http().sendAsync(req, HttpResponse.BodyHandlers.ofByteArray()).whenComplete((r, t) -> {
            if (t != null || r.statusCode() != 200) {
                LOG.warn("{} samples of a relayed batch whose reader went away could not be given back to daemon {} "
                        + "({}): they are lost", n, owner, t != null ? t.toString() : r.statusCode() + " "
                        + new String(r.body(), StandardCharsets.UTF_8).strip());
            }
        });
    }

    private static String query(Map<String, List<String>> params) {
        StringJoiner q = new StringJoiner("&");
        params.forEach((k, vs) -> vs.forEach(v -> q.add(enc(k) + "=" + enc(v))));
        return q.toString();
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
