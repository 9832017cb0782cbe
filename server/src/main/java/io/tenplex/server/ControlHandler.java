package io.tenplex.server;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A route that another module adds to the daemon's server (reconfiguration control, job APIs).
 * Bodies are small control messages, collected whole (at most {@link ServerLimits#controlBody()}
 * bytes) before the handler runs; the handler answers asynchronously and must not block the caller.
 */
public interface ControlHandler {

    /**
     * One request to a control route; {@code closed} completes if the client's connection closes
     * while the answer is still pending (the client gave up), e.g. to withdraw what the request
     * waits for; it never completes for a request built without a connection.
     */
    record Request(String method, String path, Map<String, List<String>> params, String contentType, byte[] body,
            CompletableFuture<Void> closed) {
        public Request(String method, String path, Map<String, List<String>> params, String contentType, byte[] body) {
            this(method, path, params, contentType, body, new CompletableFuture<>());
        }

        public String param(String name) {
            List<String> v = params.get(name);
            return v == null || v.isEmpty() ? null : v.get(0);
        }
    }

    /**
     * The answer: status, content type, body and extra headers (e.g. {@code Retry-After}; none by
     * default); {@code unsent}, when not null, runs if the answer could not be written (the client
     * went away), e.g. to put back what the answer took.
     */
    record Response(int status, String contentType, byte[] body, Map<String, String> headers, Runnable unsent) {
        public Response(int status, String contentType, byte[] body) {
            this(status, contentType, body, Map.of());
        }

        public Response(int status, String contentType, byte[] body, Map<String, String> headers) {
            this(status, contentType, body, headers, null);
        }

        public Response {
            headers = headers == null ? Map.of() : Map.copyOf(headers);
        }

        public static Response text(int status, String text) {
            return new Response(status, "text/plain; charset=utf-8",
                    (text + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    /** Answers a request; a failed future with an IllegalArgumentException becomes a 400. */
    CompletableFuture<Response> handle(Request request);
}
