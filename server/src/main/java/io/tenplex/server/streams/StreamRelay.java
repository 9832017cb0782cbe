package io.tenplex.server.streams;

import io.tenplex.server.ControlHandler.Request;
import io.tenplex.server.ControlHandler.Response;
import io.tenplex.server.peer.DaemonLink;
import io.tenplex.store.StoreException;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;

/**
 * Relays a push or a read to the daemon that holds the rank (one hop: the relayed request carries
 * {@code hop=1} and is never relayed again), without waiting on a thread; the answer's status,
 * body and {@code Retry-After} come back as they are.
 */
final class StreamRelay {
    private final DaemonLink link;

    StreamRelay(DaemonLink link) {
        this.link = link;
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
        return link.http().sendAsync(b.build(), HttpResponse.BodyHandlers.ofByteArray())
                .handle((r, t) -> {
                    if (t != null) {
                        throw new StoreException(StoreException.Kind.BAD_GATEWAY, "daemon " + owner
                                + " that holds the rank cannot be reached: " + t.getMessage());
                    }
                    Map<String, String> h = new HashMap<>();
                    r.headers().firstValue("Retry-After").ifPresent(v -> h.put("Retry-After", v));
                    r.headers().firstValue("X-Tenplex-Error-Code").ifPresent(v -> h.put("X-Tenplex-Error-Code", v));
                    return new Response(r.statusCode(), r.headers().firstValue("Content-Type")
                            .orElse("application/octet-stream"), r.body(), h);
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
