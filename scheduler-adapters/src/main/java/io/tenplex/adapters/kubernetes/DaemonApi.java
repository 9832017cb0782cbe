package io.tenplex.adapters.kubernetes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import io.tenplex.server.peer.DaemonLink;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;

/** The coordinating daemon's REST API, as the Kubernetes adapter uses it. */
final class DaemonApi {
    /** A non-2xx answer, with the daemon's reason. */
    static final class Refused extends IOException {
        final int status;

        Refused(int status, String what, String reason) {
            super(what + " answered " + status + ": " + reason.strip());
            this.status = status;
        }
    }

    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http;
    private final String base;
    private final String token;

    /**
     * @param address the daemon's {@code host:port} (or {@code http(s)://host:port})
     * @param link the scheme of a bare {@code host:port}, the trusted certificates and the token
     */
    DaemonApi(String address, DaemonLink link) {
        this.http = link.http();
        this.base = link.uri(address, "").toString();
        this.token = link.token();
    }

    String address() {
        return base;
    }

    private HttpRequest.Builder request(String path, Duration timeout) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout);
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return b;
    }

    private HttpResponse<String> send(HttpRequest r) throws IOException, InterruptedException {
        return http.send(r, HttpResponse.BodyHandlers.ofString());
    }

    /** POSTs JSON to {@code path}; returns the answer's JSON, or throws {@link Refused}. */
    JsonNode post(String path, JsonNode body) throws IOException, InterruptedException {
        HttpResponse<String> r = send(request(path, Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body))).build());
        if (r.statusCode() / 100 != 2) {
            throw new Refused(r.statusCode(), "POST " + path, r.body());
        }
        return json.readTree(r.body());
    }

    /** GETs JSON from {@code path}. */
    JsonNode get(String path, Duration timeout) throws IOException, InterruptedException {
        HttpResponse<String> r = send(request(path, timeout).GET().build());
        if (r.statusCode() / 100 != 2) {
            throw new Refused(r.statusCode(), "GET " + path, r.body());
        }
        return json.readTree(r.body());
    }

    /** A file of the store, or empty when there is none. */
    Optional<byte[]> readFile(String storePath) throws IOException, InterruptedException {
        HttpResponse<byte[]> r = http.send(request("/api/v1/files" + storePath, Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofByteArray());
        if (r.statusCode() == 404) {
            return Optional.empty();
        }
        if (r.statusCode() != 200) {
            throw new Refused(r.statusCode(), "GET " + storePath, new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
        }
        return Optional.of(r.body());
    }

    /** Writes (or replaces) a file of the store. */
    void writeFile(String storePath, byte[] body) throws IOException, InterruptedException {
        HttpResponse<String> r = send(request("/api/v1/files" + storePath + "?replace=true", Duration.ofSeconds(30))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body)).build());
        if (r.statusCode() / 100 != 2) {
            throw new Refused(r.statusCode(), "PUT " + storePath, r.body());
        }
    }
}
