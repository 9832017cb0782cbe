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
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Relays a push or a read to the daemon that holds the rank (one hop: the relayed request carries
 * {@code hop=1} and is never relayed again), without waiting on a thread; the answer's status,
 * body and {@code Retry-After} come back as they are. When a producer's connection closes while its
 * relayed push waits, the relayed push is cancelled (its connection closed), so the holding daemon
 * withdraws it (a push that was stored meanwhile is stored once: its producer retries with the same
 * sample id). A relayed read is never cancelled: the holding daemon may already have written its
 * batch. When its reader goes away, the read is withdrawn by its id ({@code POST .../withdraw}) and
 * its answer still awaited: an empty batch, or the batch already taken, which goes back to the
 * holding daemon ({@code POST .../returned}), as does a batch that cannot be written to its reader.
 * A relayed read is answered in the moved-samples form ({@link StreamWire}, with ids and read
 * counts) and turned into a batch here.
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

    /** Relays a push (or a producer's close): cancelled when its client goes away. */
    CompletableFuture<Response> relay(String owner, Request req, Map<String, String> set, long waitMillis) {
        HttpRequest.Builder b = request(owner, req, set).timeout(Duration.ofMillis(waitMillis).plusSeconds(30));
        CompletableFuture<HttpResponse<byte[]>> sent = link.http().sendAsync(b.build(),
                HttpResponse.BodyHandlers.ofByteArray());
        req.closed().thenRun(() -> sent.cancel(true)); // the client gave up: so does the relayed request
        return sent.handle((r, t) -> {
            if (t != null) {
                throw unreachable(owner, t);
            }
            return passOn(r);
        });
    }

    /**
     * Relays a batch read, see the class doc: no sample it takes at the holding daemon is lost
     * however its reader, or this relaying, ends (only the holding daemon's answer failing on its
     * way here after it was written, i.e. a broken connection between the daemons, loses it).
     */
    CompletableFuture<Response> relayRead(String owner, Request req, long waitMillis) {
        String id = UUID.randomUUID().toString();
        CompletableFuture<HttpResponse<byte[]>> sent = link.http().sendAsync(request(owner, req, Map.of("read", id))
                .build(), HttpResponse.BodyHandlers.ofByteArray());
        CompletableFuture<Response> answer = new CompletableFuture<>();
        req.closed().thenRun(() -> withdraw(owner, req.path(), id));
        CompletableFuture.delayedExecutor(waitMillis + LATE_MILLIS, TimeUnit.MILLISECONDS).execute(() -> {
            if (answer.completeExceptionally(new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + owner
                    + " that holds the rank did not answer a read within " + (waitMillis + LATE_MILLIS) + " ms"))) {
                withdraw(owner, req.path(), id); // a batch it still sends goes back
            }
        });
        sent.whenComplete((r, t) -> {
            if (t != null) {
                answer.completeExceptionally(unreachable(owner, t));
            } else if (isBatch(r)) {
                Runnable back = once(() -> giveBack(owner, req.path(), r.body()));
                Response batch;
                try {
                    batch = batch(r, back);
                } catch (IllegalArgumentException e) {
                    answer.completeExceptionally(new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + owner
                            + " answered a malformed batch: " + e.getMessage()));
                    return;
                }
                // gone before its answer: nobody to hand it to; a reader that closes once answered may
                // have got the batch (a trainer that stops after its last one): only a failed write sends it back
                boolean gone = req.closed().isDone();
                if (!answer.complete(batch) || gone) {
                    back.run(); // (a write to a closed reader fails too: back runs once)
                }
            } else {
                answer.complete(passOn(r));
            }
        });
        return answer;
    }

    /** How long past its wait a relayed read's answer may take before its reader is answered 502. */
    static final long LATE_MILLIS = 30_000;

    private HttpRequest.Builder request(String owner, Request req, Map<String, String> set) {
        Map<String, List<String>> params = new HashMap<>(req.params());
        set.forEach((k, v) -> params.put(k, List.of(v)));
        params.put("hop", List.of("1"));
        HttpRequest.Builder b = link.authorize(HttpRequest.newBuilder(link.uri(owner, req.path() + "?" + query(params))))
                .method(req.method(), HttpRequest.BodyPublishers.ofByteArray(req.body()));
        if (req.contentType() != null) {
            b.header("Content-Type", req.contentType());
        }
        return b;
    }

    private static StoreException unreachable(String owner, Throwable t) {
        return new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + owner
                + " that holds the rank cannot be reached: " + t.getMessage());
    }

    private static boolean isBatch(HttpResponse<byte[]> r) {
        return r.statusCode() == 200 && r.headers().firstValue("Content-Type").orElse("").equals(SAMPLES);
    }

    private static Runnable once(Runnable r) {
        AtomicBoolean ran = new AtomicBoolean();
        return () -> {
            if (ran.compareAndSet(false, true)) {
                r.run();
            }
        };
    }

    /** The holding daemon's answer as it is (status, body, {@code Retry-After}, error code). */
    private static Response passOn(HttpResponse<byte[]> r) {
        Map<String, String> h = new HashMap<>();
        r.headers().firstValue("Retry-After").ifPresent(v -> h.put("Retry-After", v));
        r.headers().firstValue("X-Tenplex-Error-Code").ifPresent(v -> h.put("X-Tenplex-Error-Code", v));
        return new Response(r.statusCode(), r.headers().firstValue("Content-Type")
                .orElse("application/octet-stream"), r.body(), h);
    }

    /** A relayed batch for the reader; if it cannot be written, {@code back} sends its samples back. */
    private static Response batch(HttpResponse<byte[]> r, Runnable back) {
        List<byte[]> data = new ArrayList<>();
        StreamWire.moved(r.body()).values().forEach(l -> l.forEach(s -> data.add(s.data())));
        boolean ended = r.headers().firstValue(ENDED_HEADER).isPresent();
        return new Response(200, "application/octet-stream", StreamWire.batch(data, ended), Map.of(), back);
    }

    /** Asks {@code owner} to withdraw the relayed read {@code id} (if it failed, the read only waits longer). */
    private void withdraw(String owner, String batchPath, String id) {
        String path = sibling(batchPath, "withdraw") + "?read=" + enc(id);
        HttpRequest req = link.authorize(HttpRequest.newBuilder(link.uri(owner, path))).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        link.http().sendAsync(req, HttpResponse.BodyHandlers.discarding()).whenComplete((r, t) -> {
            if (t != null || r.statusCode() != 200) {
                LOG.info("a relayed read whose reader went away could not be withdrawn at daemon {} ({}): it waits "
                        + "its time, and a batch it takes comes back", owner, t != null ? t : r.statusCode());
            }
        });
    }

    private static String sibling(String batchPath, String what) {
        return batchPath.substring(0, batchPath.length() - "batch".length()) + what;
    }

    private void giveBack(String owner, String batchPath, byte[] samples) {
        int n = StreamWire.moved(samples).values().stream().mapToInt(List::size).sum();
        if (n == 0) {
            return;
        }
        String path = sibling(batchPath, "returned");
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
