package io.tenplex.server.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.tenplex.jobs.common.JobLayout;
import io.tenplex.server.peer.DaemonLink;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * {@link HttpDaemonClient}'s calls that check a change's source where it is saved ({@link ChangeRoutes}):
 * {@code POST .../trees} (each old rank's layout digest) and {@code POST .../digests} (the digests of
 * saved values a change of T or P compares), JSON both ways.
 */
final class SourceCheckCalls {
    private final DaemonLink link;
    private final Duration timeout;
    private final ObjectMapper json = new ObjectMapper();

    SourceCheckCalls(DaemonLink link, Duration timeout) {
        this.link = link;
        this.timeout = timeout;
    }

    CompletableFuture<Map<Integer, String>> describeTrees(InetSocketAddress daemon, String job, String sourceDir,
            List<Integer> ranks) {
        var body = json.createObjectNode().put("sourceDir", sourceDir);
        ranks.forEach(body.putArray("ranks")::add);
        return post(daemon, job, "/trees", body).thenApply(a -> {
            Map<Integer, String> out = new TreeMap<>();
            a.path("layouts").fields().forEachRemaining(e -> out.put(Integer.parseInt(e.getKey()),
                    e.getValue().isNull() ? null : e.getValue().asText()));
            return out;
        });
    }

    CompletableFuture<Map<Integer, Map<String, String>>> digestValues(InetSocketAddress daemon, String job,
            String sourceDir, Map<Integer, List<String>> values) {
        var body = json.createObjectNode().put("sourceDir", sourceDir);
        var v = body.putObject("values");
        values.forEach((rank, paths) -> paths.forEach(v.putArray(String.valueOf(rank))::add));
        return post(daemon, job, "/digests", body).thenApply(a -> {
            Map<Integer, Map<String, String>> out = new TreeMap<>();
            a.path("digests").fields().forEachRemaining(e -> {
                Map<String, String> ds = new TreeMap<>();
                e.getValue().fields().forEachRemaining(d -> {
                    if (d.getValue().isTextual()) { // else no digest: the coordinator names what is missing
                        ds.put(d.getKey(), d.getValue().textValue());
                    }
                });
                if (e.getKey().matches("[0-9]{1,5}")) { // else not a rank: left out, and what was asked is missing
                    out.put(Integer.parseInt(e.getKey()), ds);
                }
            });
            return out;
        });
    }

    private CompletableFuture<JsonNode> post(InetSocketAddress daemon, String job, String route, JsonNode body) {
        HttpRequest.Builder r;
        try {
            r = link.request(daemon, new JobLayout(job).api(route)).timeout(timeout)
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(
                            json.writeValueAsBytes(body)));
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
        return link.http().sendAsync(r.build(), HttpResponse.BodyHandlers.ofByteArray()).thenApply(a -> {
            HttpDaemonClient.ok(a);
            try {
                return json.readTree(a.body());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }
}
